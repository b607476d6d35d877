{{- define "gorag.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "gorag.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "gorag.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "gorag.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "gorag.selectorLabels" -}}
app.kubernetes.io/name: {{ include "gorag.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "gorag.secretName" -}}
{{- if .Values.llmApiKey.existingSecret }}
{{- .Values.llmApiKey.existingSecret }}
{{- else }}
{{- printf "%s-llm" (include "gorag.fullname" .) }}
{{- end }}
{{- end }}

{{- define "gorag.hasApiKey" -}}
{{- if or .Values.llmApiKey.existingSecret .Values.llmApiKey.value }}true{{- end }}
{{- end }}

{{- /* The Kafka certificates and password, mounted as files (the service and the desk alike). */}}
{{- define "gorag.kafkaMounts" -}}
{{- if .Values.kafkaTls.existingSecret }}
- name: kafka-tls
  mountPath: /etc/gorag/kafka-tls
  readOnly: true
{{- end }}
{{- if .Values.kafkaSasl.existingSecret }}
- name: kafka-sasl
  mountPath: /etc/gorag/kafka-sasl
  readOnly: true
{{- end }}
{{- end }}

{{- define "gorag.kafkaVolumes" -}}
{{- with .Values.kafkaTls.existingSecret }}
- name: kafka-tls
  secret:
    secretName: {{ . }}
    defaultMode: 0400
{{- end }}
{{- with .Values.kafkaSasl.existingSecret }}
- name: kafka-sasl
  secret:
    secretName: {{ . }}
    defaultMode: 0400
{{- end }}
{{- end }}

{{- define "gorag.reviewName" -}}
{{- printf "%s-review" (include "gorag.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- /* The desk's pods: a name of their own, so that the service's selectors never take them. */}}
{{- define "gorag.reviewSelectorLabels" -}}
app.kubernetes.io/name: {{ include "gorag.name" . }}-review
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: review
{{- end }}
