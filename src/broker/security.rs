//! How gorag reaches a Kafka cluster that encrypts and authenticates: `kafka.security_protocol`,
//! `[kafka.tls]` (a CA bundle, a client certificate for mTLS) and `[kafka.sasl]` (SCRAM or
//! PLAIN), with every secret read from a file (or the environment) and never shown.
//! docs/guide/security.md explains each setting with the managed clusters' recipes.

use std::collections::BTreeMap;
use std::fmt;
use std::ops::{Deref, DerefMut};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize, Serializer};

use crate::secret::{is_secret_key, Secret, SHOWN_AS};

/// The environment variable read for the SASL password when `kafka.sasl.password_file` is unset.
pub const SASL_PASSWORD_ENV: &str = "GORAG_KAFKA_SASL_PASSWORD";

/// librdkafka's `security.protocol`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SecurityProtocol {
    #[serde(alias = "PLAINTEXT")]
    Plaintext,
    #[serde(alias = "SSL")]
    Ssl,
    #[serde(alias = "SASL_PLAINTEXT")]
    SaslPlaintext,
    #[serde(alias = "SASL_SSL")]
    SaslSsl,
}

impl SecurityProtocol {
    pub fn as_librdkafka(self) -> &'static str {
        match self {
            Self::Plaintext => "plaintext",
            Self::Ssl => "ssl",
            Self::SaslPlaintext => "sasl_plaintext",
            Self::SaslSsl => "sasl_ssl",
        }
    }

    pub fn uses_tls(self) -> bool {
        matches!(self, Self::Ssl | Self::SaslSsl)
    }

    pub fn uses_sasl(self) -> bool {
        matches!(self, Self::SaslPlaintext | Self::SaslSsl)
    }

    /// A `security.protocol` written as a librdkafka property (any case).
    fn parse(text: &str) -> Option<Self> {
        match text.to_ascii_lowercase().as_str() {
            "plaintext" => Some(Self::Plaintext),
            "ssl" => Some(Self::Ssl),
            "sasl_plaintext" => Some(Self::SaslPlaintext),
            "sasl_ssl" => Some(Self::SaslSsl),
            _ => None,
        }
    }
}

/// The SASL mechanisms this build's librdkafka provides (with OpenSSL; GSSAPI would need Cyrus
/// SASL and OAUTHBEARER/OIDC libcurl, neither built in).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum SaslMechanism {
    #[serde(rename = "SCRAM-SHA-512", alias = "scram-sha-512")]
    ScramSha512,
    #[serde(rename = "SCRAM-SHA-256", alias = "scram-sha-256")]
    ScramSha256,
    #[serde(rename = "PLAIN", alias = "plain")]
    Plain,
}

impl SaslMechanism {
    pub fn as_librdkafka(self) -> &'static str {
        match self {
            Self::ScramSha512 => "SCRAM-SHA-512",
            Self::ScramSha256 => "SCRAM-SHA-256",
            Self::Plain => "PLAIN",
        }
    }
}

/// `[kafka.tls]`: the CA bundle that signed the brokers' certificates, and this client's own
/// certificate and key for mTLS. Files in PEM.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TlsSection {
    /// CAs to trust (unset: the system's store, e.g. a managed cluster's public CA).
    pub ca_file: Option<PathBuf>,
    /// This client's certificate (mTLS), with `key_file`.
    pub cert_file: Option<PathBuf>,
    /// This client's private key (mTLS), with `cert_file`.
    pub key_file: Option<PathBuf>,
    /// The password of an encrypted `key_file`.
    pub key_password_file: Option<PathBuf>,
    /// Check that a broker's certificate names the host connected to (librdkafka's
    /// `ssl.endpoint.identification.algorithm = https`). Turn off only for certificates made
    /// without the brokers' names.
    pub verify_hostname: bool,
}

impl Default for TlsSection {
    fn default() -> Self {
        Self {
            ca_file: None,
            cert_file: None,
            key_file: None,
            key_password_file: None,
            verify_hostname: true,
        }
    }
}

impl TlsSection {
    fn is_set(&self) -> bool {
        self.ca_file.is_some()
            || self.cert_file.is_some()
            || self.key_file.is_some()
            || self.key_password_file.is_some()
            || !self.verify_hostname
    }

    /// The files named, with their keys.
    fn files(&self) -> impl Iterator<Item = (&'static str, &Path)> {
        [
            ("kafka.tls.ca_file", &self.ca_file),
            ("kafka.tls.cert_file", &self.cert_file),
            ("kafka.tls.key_file", &self.key_file),
            ("kafka.tls.key_password_file", &self.key_password_file),
        ]
        .into_iter()
        .filter_map(|(key, path)| path.as_deref().map(|path| (key, path)))
    }
}

/// `[kafka.sasl]`: who gorag logs in as.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SaslSection {
    pub mechanism: Option<SaslMechanism>,
    pub username: Option<String>,
    /// A file holding the password (a mounted Secret); unset: `$GORAG_KAFKA_SASL_PASSWORD`.
    pub password_file: Option<PathBuf>,
}

impl SaslSection {
    fn is_set(&self) -> bool {
        self.mechanism.is_some() || self.username.is_some() || self.password_file.is_some()
    }
}

/// The secrets the settings point at, read when the configuration is loaded.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct KafkaSecrets {
    pub sasl_password: Option<Secret>,
    pub key_password: Option<Secret>,
}

/// `kafka.client`: any other librdkafka property. Values of secret properties (`sasl.password`,
/// `ssl.key.password`, …) are shown as `***` by `Debug` and by `--print-config`.
#[derive(Clone, Default, PartialEq, Deserialize)]
#[serde(transparent)]
pub struct ClientProperties(pub BTreeMap<String, String>);

impl Deref for ClientProperties {
    type Target = BTreeMap<String, String>;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl DerefMut for ClientProperties {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.0
    }
}

impl ClientProperties {
    /// The properties with every secret's value replaced by `***`.
    pub fn shown(&self) -> BTreeMap<&str, &str> {
        self.0
            .iter()
            .map(|(key, value)| {
                let shown = if is_secret_key(key) { SHOWN_AS } else { value };
                (key.as_str(), shown)
            })
            .collect()
    }

    /// The values of the secret properties (to scrub from librdkafka's messages).
    pub fn secret_values(&self) -> impl Iterator<Item = &str> {
        self.0
            .iter()
            .filter(|(key, _)| is_secret_key(key))
            .map(|(_, value)| value.as_str())
    }
}

impl fmt::Debug for ClientProperties {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.shown()).finish()
    }
}

impl Serialize for ClientProperties {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.shown().serialize(serializer)
    }
}

/// A librdkafka property's value: shown, or a secret.
pub enum PropertyValue<'a> {
    Plain(String),
    Secret(&'a Secret),
}

/// What the typed settings set, as librdkafka properties, in the order librdkafka reads them.
pub fn security_properties<'a>(
    protocol: Option<SecurityProtocol>,
    tls: &TlsSection,
    sasl: &SaslSection,
    secrets: &'a KafkaSecrets,
) -> Vec<(&'static str, PropertyValue<'a>)> {
    let path = |p: &Path| PropertyValue::Plain(p.display().to_string());
    let mut properties = Vec::new();
    if let Some(protocol) = protocol {
        properties.push((
            "security.protocol",
            PropertyValue::Plain(protocol.as_librdkafka().into()),
        ));
    }
    if let Some(ca) = &tls.ca_file {
        properties.push(("ssl.ca.location", path(ca)));
    }
    if let Some(cert) = &tls.cert_file {
        properties.push(("ssl.certificate.location", path(cert)));
    }
    if let Some(key) = &tls.key_file {
        properties.push(("ssl.key.location", path(key)));
    }
    if let Some(password) = &secrets.key_password {
        properties.push(("ssl.key.password", PropertyValue::Secret(password)));
    }
    if !tls.verify_hostname {
        properties.push((
            "ssl.endpoint.identification.algorithm",
            PropertyValue::Plain("none".into()),
        ));
    }
    if let Some(mechanism) = sasl.mechanism {
        properties.push((
            "sasl.mechanism",
            PropertyValue::Plain(mechanism.as_librdkafka().into()),
        ));
    }
    if let Some(username) = &sasl.username {
        properties.push(("sasl.username", PropertyValue::Plain(username.clone())));
    }
    if let Some(password) = &secrets.sasl_password {
        properties.push(("sasl.password", PropertyValue::Secret(password)));
    }
    properties
}

/// The settings of `[kafka]` this module owns, checked together; the secrets read.
pub struct SecurityCheck<'a> {
    pub protocol: Option<SecurityProtocol>,
    pub tls: &'a TlsSection,
    pub sasl: &'a SaslSection,
    pub client: &'a ClientProperties,
}

impl SecurityCheck<'_> {
    /// The protocol in effect: the typed key, else `kafka.client."security.protocol"`.
    fn effective_protocol(&self) -> Option<SecurityProtocol> {
        self.protocol.or_else(|| {
            self.client
                .get("security.protocol")
                .and_then(|text| SecurityProtocol::parse(text))
        })
    }

    /// Read the secrets the settings point at; every problem goes to `errors`.
    /// `password_env` is `$GORAG_KAFKA_SASL_PASSWORD` when set.
    pub fn run(&self, password_env: Option<&str>, errors: &mut Vec<String>) -> KafkaSecrets {
        let protocol = self.effective_protocol();
        self.check_protocol_fits(protocol, errors);
        self.check_no_duplicates(errors);
        self.check_files(errors);
        let key_password = self
            .tls
            .key_password_file
            .as_deref()
            .and_then(|path| read_secret("kafka.tls.key_password_file", path, errors));
        let sasl_password = match (&self.sasl.password_file, password_env) {
            (Some(path), _) => read_secret("kafka.sasl.password_file", path, errors),
            (None, Some(value)) if !value.is_empty() => Some(Secret::new(value)),
            _ => None,
        };
        if protocol.is_some_and(SecurityProtocol::uses_sasl) {
            self.check_sasl_complete(sasl_password.is_some(), errors);
        }
        KafkaSecrets {
            sasl_password,
            key_password,
        }
    }

    /// TLS files only with a TLS protocol, SASL settings only with a SASL one.
    fn check_protocol_fits(&self, protocol: Option<SecurityProtocol>, errors: &mut Vec<String>) {
        let named = protocol.map_or("unset (plaintext)", SecurityProtocol::as_librdkafka);
        if self.tls.is_set() && !protocol.is_some_and(SecurityProtocol::uses_tls) {
            errors.push(format!(
                "kafka.tls: set, but kafka.security_protocol is {named}: set it to \"ssl\" \
                 (or \"sasl_ssl\" with a SASL login) for the TLS settings to be used"
            ));
        }
        if self.sasl.is_set() && !protocol.is_some_and(SecurityProtocol::uses_sasl) {
            errors.push(format!(
                "kafka.sasl: set, but kafka.security_protocol is {named}: set it to \
                 \"sasl_ssl\" (or \"sasl_plaintext\" on an unencrypted listener, which sends \
                 the password in clear)"
            ));
        }
        if self.tls.cert_file.is_some() != self.tls.key_file.is_some() {
            errors.push(
                "kafka.tls.cert_file and kafka.tls.key_file: give both (this client's \
                 certificate and its private key, for mTLS) or neither"
                    .into(),
            );
        }
        if self.tls.key_password_file.is_some() && self.tls.key_file.is_none() {
            errors.push(
                "kafka.tls.key_password_file: set without kafka.tls.key_file (the key it opens)"
                    .into(),
            );
        }
    }

    /// A property set both by a typed key and under `kafka.client` would be ambiguous.
    fn check_no_duplicates(&self, errors: &mut Vec<String>) {
        let empty = KafkaSecrets::default();
        let typed = security_properties(self.protocol, self.tls, self.sasl, &empty);
        let mut owned: Vec<&str> = typed.iter().map(|(key, _)| *key).collect();
        if self.tls.key_password_file.is_some() {
            owned.push("ssl.key.password");
        }
        if self.sasl.password_file.is_some() {
            owned.push("sasl.password");
        }
        if self.sasl.mechanism.is_some() {
            owned.push("sasl.mechanisms");
        }
        for key in owned {
            if self.client.contains_key(key) {
                errors.push(format!(
                    "kafka.client.\"{key}\": also set by a kafka.security_protocol, kafka.tls or \
                     kafka.sasl key: keep one"
                ));
            }
        }
    }

    /// Every file named can be read (a mounted Secret missing is said now, not at the first
    /// connection).
    fn check_files(&self, errors: &mut Vec<String>) {
        for (key, path) in self.tls.files() {
            if let Err(error) = std::fs::File::open(path) {
                errors.push(format!("{key}: {}: {error}", path.display()));
            }
        }
    }

    /// A SASL login needs a mechanism, a user and a password.
    fn check_sasl_complete(&self, has_password: bool, errors: &mut Vec<String>) {
        let client = |key: &str| self.client.contains_key(key);
        if self.sasl.mechanism.is_none() && !client("sasl.mechanism") && !client("sasl.mechanisms")
        {
            errors.push(
                "kafka.sasl.mechanism: a SASL protocol needs a mechanism: \"SCRAM-SHA-512\", \
                 \"SCRAM-SHA-256\" or \"PLAIN\""
                    .into(),
            );
        }
        if self.sasl.username.is_none() && !client("sasl.username") {
            errors.push("kafka.sasl.username: a SASL protocol needs a user name".into());
        }
        if !has_password && !client("sasl.password") {
            errors.push(format!(
                "kafka.sasl.password_file: a SASL protocol needs a password: a file holding it \
                 (a mounted Secret), or ${SASL_PASSWORD_ENV}"
            ));
        }
    }
}

fn read_secret(key: &str, path: &Path, errors: &mut Vec<String>) -> Option<Secret> {
    match Secret::from_file(path) {
        Ok(secret) => Some(secret),
        Err(error) => {
            errors.push(format!("{key}: {error}"));
            None
        }
    }
}
