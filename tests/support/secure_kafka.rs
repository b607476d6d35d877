#![allow(dead_code)] // each test binary uses its own subset
//! Brokers that encrypt and authenticate, for the security tests: a certificate authority made
//! with the `openssl` command, nisshi with a TLS listener and SCRAM logins (SASL_SSL), and nisshi
//! behind stunnel demanding a client certificate (mTLS; nisshi's own listener does not ask for
//! one, stunnel — a TLS terminator used in front of real services — does).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::free_port;

/// Certificates and keys of one test, in `dir`: a CA, the broker's certificate for `localhost`
/// and 127.0.0.1, a client certificate (its key encrypted with [`Pki::KEY_PASSWORD`]), and a
/// second CA nobody trusts with a client certificate of its own.
pub struct Pki {
    pub dir: PathBuf,
    pub ca: PathBuf,
    pub server_cert: PathBuf,
    pub server_key: PathBuf,
    pub client_cert: PathBuf,
    /// Encrypted PKCS#8, opened with [`Pki::KEY_PASSWORD`] (in `key_password_file`).
    pub client_key: PathBuf,
    pub key_password_file: PathBuf,
    pub rogue_ca: PathBuf,
    pub rogue_client_cert: PathBuf,
    pub rogue_client_key: PathBuf,
}

fn openssl(dir: &Path, args: &[&str]) {
    let output = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("openssl (Debian's openssl package)");
    assert!(
        output.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// A CA named `name`: `<name>.crt`, `<name>.key`.
fn authority(dir: &Path, name: &str) {
    openssl(
        dir,
        &[
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-keyout",
            &format!("{name}.key"),
            "-out",
            &format!("{name}.crt"),
            "-days",
            "2",
            "-subj",
            &format!("/CN={name}"),
        ],
    );
}

/// A certificate `<name>.crt` (key `<name>.key`, unencrypted PKCS#8) signed by CA `ca`.
fn signed(dir: &Path, ca: &str, name: &str, extensions: &str) {
    openssl(
        dir,
        &[
            "req",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-keyout",
            &format!("{name}.key"),
            "-out",
            &format!("{name}.csr"),
            "-subj",
            &format!("/CN={name}"),
        ],
    );
    let ext = dir.join(format!("{name}.ext"));
    std::fs::write(&ext, extensions).expect("extensions file");
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            &format!("{name}.csr"),
            "-CA",
            &format!("{ca}.crt"),
            "-CAkey",
            &format!("{ca}.key"),
            "-CAcreateserial",
            "-out",
            &format!("{name}.crt"),
            "-days",
            "2",
            "-extfile",
            &format!("{name}.ext"),
        ],
    );
}

impl Pki {
    /// The client key's password: the tests look for it in every output.
    pub const KEY_PASSWORD: &'static str = "key-Pa55-4d1f9c";

    pub fn generate(dir: &Path) -> Self {
        std::fs::create_dir_all(dir).expect("pki dir");
        authority(dir, "ca");
        authority(dir, "rogue-ca");
        signed(
            dir,
            "ca",
            "broker",
            "subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n",
        );
        let client = "extendedKeyUsage=clientAuth\n";
        signed(dir, "ca", "client", client);
        signed(dir, "rogue-ca", "rogue-client", client);
        openssl(
            dir,
            &[
                "pkcs8",
                "-topk8",
                "-in",
                "client.key",
                "-out",
                "client-encrypted.key",
                "-v2",
                "aes-256-cbc",
                "-passout",
                &format!("pass:{}", Self::KEY_PASSWORD),
            ],
        );
        let key_password_file = dir.join("client-key-password");
        std::fs::write(&key_password_file, format!("{}\n", Self::KEY_PASSWORD))
            .expect("password file");
        Self {
            dir: dir.to_path_buf(),
            ca: dir.join("ca.crt"),
            server_cert: dir.join("broker.crt"),
            server_key: dir.join("broker.key"),
            client_cert: dir.join("client.crt"),
            client_key: dir.join("client-encrypted.key"),
            key_password_file,
            rogue_ca: dir.join("rogue-ca.crt"),
            rogue_client_cert: dir.join("rogue-client.crt"),
            rogue_client_key: dir.join("rogue-client.key"),
        }
    }
}

fn nisshi() -> String {
    std::env::var("GORAG_NISSHI").unwrap_or_else(|_| "nisshi".into())
}

fn wait_listening(address: &str, what: &str, log: &Path) {
    let started = Instant::now();
    while std::net::TcpStream::connect(address).is_err() {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "{what} did not listen on {address}:\n{}",
            std::fs::read_to_string(log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn stop(child: &mut Child) {
    let _ = child.kill();
    let _ = child.wait();
}

/// A broker (and, for mTLS, its stunnel) of one test.
pub struct SecureBroker {
    /// `kafka.brokers` for gorag.
    pub address: String,
    processes: Vec<Child>,
}

impl Drop for SecureBroker {
    fn drop(&mut self) {
        for child in &mut self.processes {
            stop(child);
        }
    }
}

fn spawn_nisshi(
    dir: &Path,
    log_name: &str,
    listen: &str,
    advertise: &str,
    extra: &[&str],
) -> Child {
    let log = dir.join(log_name);
    let file = std::fs::File::create(&log).expect("broker log");
    let listen = format!("tcp://{listen}");
    let advertise = format!("tcp://{advertise}");
    let child = Command::new(nisshi())
        .args(["broker", "--listener-url", &listen])
        .args(["--advertised-listener-url", &advertise])
        .args(["--storage-engine", "sqlite://users.db"])
        .args(["--group-initial-rebalance-delay", "0s"])
        .args(extra)
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(file)
        .spawn()
        .unwrap_or_else(|e| panic!("start {} (scripts/kafka.sh install): {e}", nisshi()));
    child
}

impl SecureBroker {
    /// nisshi with a TLS listener (the broker certificate of `pki`) that requires a SCRAM login:
    /// `user` with `password` is created first (on a plaintext start of the same storage, since
    /// a broker requiring logins has nobody to log in as yet).
    pub fn sasl_ssl(dir: &Path, pki: &Pki, user: &str, password: &str) -> Self {
        std::fs::create_dir_all(dir).expect("broker dir");
        let address = format!("127.0.0.1:{}", free_port());
        let mut bootstrap = spawn_nisshi(dir, "bootstrap.log", &address, &address, &[]);
        wait_listening(&address, "nisshi (bootstrap)", &dir.join("bootstrap.log"));
        let created = Command::new(nisshi())
            .args(["user", "create", "--broker", &format!("tcp://{address}")])
            .args([user, password, "--mechanism", "scram512"])
            .output()
            .expect("nisshi user create");
        stop(&mut bootstrap);
        assert!(
            created.status.success(),
            "nisshi user create: {}",
            String::from_utf8_lossy(&created.stderr)
        );
        let cert = pki.server_cert.display().to_string();
        let key = pki.server_key.display().to_string();
        let broker = spawn_nisshi(
            dir,
            "broker.log",
            &address,
            &address,
            &["--authentication", "--cert", &cert, "--key", &key],
        );
        wait_listening(&address, "nisshi (SASL_SSL)", &dir.join("broker.log"));
        Self {
            address,
            processes: vec![broker],
        }
    }

    /// nisshi on a plaintext loopback port, reached through stunnel, which presents the broker
    /// certificate and admits only clients whose certificate the test CA signed.
    pub fn mtls(dir: &Path, pki: &Pki) -> Self {
        std::fs::create_dir_all(dir).expect("broker dir");
        let inner = format!("127.0.0.1:{}", free_port());
        let address = format!("127.0.0.1:{}", free_port());
        let broker = spawn_nisshi(dir, "broker.log", &inner, &address, &[]);
        wait_listening(&inner, "nisshi (behind stunnel)", &dir.join("broker.log"));
        let config = dir.join("stunnel.conf");
        std::fs::write(
            &config,
            format!(
                "foreground = yes\npid =\ndebug = notice\n\n[kafka]\naccept = {address}\n\
                 connect = {inner}\ncert = {}\nkey = {}\nCAfile = {}\nverifyChain = yes\n\
                 requireCert = yes\n",
                pki.server_cert.display(),
                pki.server_key.display(),
                pki.ca.display()
            ),
        )
        .expect("stunnel.conf");
        let log = dir.join("stunnel.log");
        let stunnel = std::env::var("GORAG_STUNNEL").unwrap_or_else(|_| "stunnel4".into());
        let proxy = Command::new(&stunnel)
            .arg(&config)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).expect("stunnel log"))
            .spawn()
            .unwrap_or_else(|e| panic!("start {stunnel} (apt-get install stunnel4): {e}"));
        wait_listening(&address, "stunnel", &log);
        Self {
            address,
            processes: vec![broker, proxy],
        }
    }
}
