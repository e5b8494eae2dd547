//! TLS as libpq's parameters ask for it, against a real PostgreSQL with TLS
//! (`MUISTI_POSTGRES_TLS_URL`: `.ci/postgres-tls` starts one whose certificate names
//! `localhost` only, from a test CA, with `other-ca.crt` beside the CA, refusing TCP without
//! TLS and admitting role `muisti_cert` by client certificate). That server has no pgvector:
//! a store that connected stops at the missing extension with its own error, so "opened up to
//! pgvector" is a connection that was encrypted, checked and authenticated as asked.

use std::path::PathBuf;

use muisti_core::{Error, ErrorKind};
use muisti_postgres::PostgresStore;

/// The server's port and the directory of its certificates.
struct Tls {
    port: String,
    dir: PathBuf,
}

impl Tls {
    fn get() -> Option<Self> {
        let Some(url) = std::env::var("MUISTI_POSTGRES_TLS_URL")
            .ok()
            .filter(|u| !u.is_empty())
        else {
            muisti_testkit::service_unavailable(
                "postgres with TLS",
                "MUISTI_POSTGRES_TLS_URL is not set",
            );
            return None;
        };
        let port = url
            .split_once("localhost:")
            .and_then(|(_, rest)| rest.split_once('/'))
            .map(|(port, _)| port.to_owned())
            .expect("MUISTI_POSTGRES_TLS_URL names localhost:<port>");
        let root = url
            .split_once("sslrootcert=")
            .map(|(_, path)| PathBuf::from(path.split('&').next().unwrap_or(path)))
            .expect("MUISTI_POSTGRES_TLS_URL has sslrootcert");
        let dir = root.parent().expect("a directory").to_path_buf();
        Some(Self { port, dir })
    }

    fn file(&self, name: &str) -> String {
        self.dir.join(name).display().to_string()
    }

    /// A URL for `user` at `host` with `params`.
    fn url(&self, user: &str, host: &str, params: &str) -> String {
        format!(
            "postgresql://{user}@{host}:{}/postgres?connect_timeout=5&schema=muisti_tls&{params}",
            self.port
        )
    }

    /// How opening a store at `url` ended: `Ok` when it connected (and then found no
    /// pgvector), the error otherwise.
    fn connect(&self, url: &str) -> Result<(), Error> {
        match PostgresStore::open(url) {
            Ok(_) => panic!("{url}: the TLS server has no pgvector, yet the store opened"),
            Err(e) if e.to_string().contains("pgvector") => Ok(()),
            Err(e) => Err(e),
        }
    }

    fn refused(&self, url: &str, because: &str) {
        let err = self.connect(url).expect_err(url);
        assert!(
            err.to_string().contains(because),
            "{url}: expected {because:?} in {err}"
        );
    }
}

#[test]
fn verify_full_checks_the_chain_and_the_name() {
    let Some(t) = Tls::get() else { return };
    let ca = format!("sslrootcert={}", t.file("ca.crt"));
    t.connect(&t.url(
        "postgres",
        "localhost",
        &format!("sslmode=verify-full&{ca}"),
    ))
    .expect("the certificate names localhost and is under the CA");
    // The certificate does not name 127.0.0.1.
    t.refused(
        &t.url(
            "postgres",
            "127.0.0.1",
            &format!("sslmode=verify-full&{ca}"),
        ),
        "certificate",
    );
    let other = format!("sslrootcert={}", t.file("other-ca.crt"));
    t.refused(
        &t.url(
            "postgres",
            "localhost",
            &format!("sslmode=verify-full&{other}"),
        ),
        "certificate",
    );
}

#[test]
fn verify_ca_checks_the_chain_not_the_name() {
    let Some(t) = Tls::get() else { return };
    let ca = format!("sslrootcert={}", t.file("ca.crt"));
    t.connect(&t.url("postgres", "127.0.0.1", &format!("sslmode=verify-ca&{ca}")))
        .expect("any name under the CA");
    let other = format!("sslrootcert={}", t.file("other-ca.crt"));
    t.refused(
        &t.url(
            "postgres",
            "127.0.0.1",
            &format!("sslmode=verify-ca&{other}"),
        ),
        "certificate",
    );
}

#[test]
fn require_and_prefer_encrypt_without_checking_unless_given_roots() {
    let Some(t) = Tls::get() else { return };
    // The server refuses TCP without TLS, so each that connects was encrypted.
    for params in ["sslmode=require", "sslmode=prefer", "sslmode=allow", ""] {
        t.connect(&t.url("postgres", "127.0.0.1", params))
            .unwrap_or_else(|e| panic!("{params:?}: {e}"));
    }
    // libpq's rule: require with roots checks the chain.
    let other = format!("sslrootcert={}", t.file("other-ca.crt"));
    t.refused(
        &t.url("postgres", "127.0.0.1", &format!("sslmode=require&{other}")),
        "certificate",
    );
    t.refused(
        &t.url("postgres", "127.0.0.1", "sslmode=disable"),
        "no encryption",
    );
}

#[test]
fn a_client_certificate_authenticates() {
    let Some(t) = Tls::get() else { return };
    let ca = format!("sslrootcert={}", t.file("ca.crt"));
    let verified = format!("sslmode=verify-full&{ca}");
    t.connect(&t.url(
        "muisti_cert",
        "localhost",
        &format!(
            "{verified}&sslcert={}&sslkey={}",
            t.file("client.crt"),
            t.file("client.key")
        ),
    ))
    .expect("the role logs in by its certificate");
    t.refused(&t.url("muisti_cert", "localhost", &verified), "certificate");
}

#[test]
fn unusable_tls_files_are_named_before_connecting() {
    let Some(t) = Tls::get() else { return };
    for (params, field) in [
        (
            format!("sslmode=verify-full&sslrootcert={}", t.file("server.ext")),
            "sslrootcert",
        ),
        (
            format!("sslmode=verify-full&sslrootcert={}", t.file("missing.crt")),
            "sslrootcert",
        ),
        (
            format!(
                "sslcert={}&sslkey={}",
                t.file("client.crt"),
                t.file("client.ext")
            ),
            "sslkey",
        ),
        (
            format!(
                "sslcert={}&sslkey={}",
                t.file("server.ext"),
                t.file("client.key")
            ),
            "sslcert",
        ),
    ] {
        let url = t.url("postgres", "localhost", &params);
        let err = PostgresStore::open(&url).expect_err(&url);
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{url}: {err}");
        assert!(err.to_string().contains(field), "{url}: {err}");
    }
}
