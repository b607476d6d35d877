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
