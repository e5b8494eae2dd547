//! TLS to PostgreSQL, as libpq's URL parameters ask for it: `sslmode`, `sslrootcert`,
//! `sslcert` and `sslkey`, with libpq's meanings (rustls with the ring provider does the
//! work; the driver never sees these parameters).
//!
//! | `sslmode` | encrypted | server certificate checked |
//! |---|---|---|
//! | `disable` | never | - |
//! | `allow`, `prefer` (the default) | when the server offers it | no |
//! | `require` | always | no; the chain when `sslrootcert` is given (libpq's rule) |
//! | `verify-ca` | always | the chain up to a root of `sslrootcert` |
//! | `verify-full` | always | the chain, and the host name in it |
//!
//! `sslrootcert` is a PEM file of roots, or `system` for the system's (which, as in libpq,
//! needs `verify-full`); without it the verifying modes read libpq's default
//! `~/.postgresql/root.crt`. `sslcert` and `sslkey` (PEM files, both or neither) are a
//! client certificate for `cert` authentication. As in libpq, `sslmode` does not apply to a
//! Unix socket, which is never encrypted.

use std::{path::PathBuf, sync::Arc};

use muisti_core::{Error, Result};
use muisti_store::StoreUrl;
use postgres::config::{Host, SslMode};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
    client::{
        WebPkiServerVerifier,
        danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier},
    },
    crypto::{CryptoProvider, ring, verify_tls12_signature, verify_tls13_signature},
    pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime, pem::PemObject},
};
use tokio_postgres_rustls::MakeRustlsConnect;

/// The parameters of a store URL read here, kept from the driver.
pub(crate) const PARAMS: [&str; 4] = ["sslmode", "sslrootcert", "sslcert", "sslkey"];

/// How the pool's connections are made.
#[derive(Clone)]
pub(crate) enum Connector {
    /// In the clear.
    Plain,
    /// Through rustls, with the checks `sslmode` asks for.
    Tls(MakeRustlsConnect),
}

impl Connector {
    /// Connects as `config` says.
    pub(crate) fn connect(
        &self,
        config: &postgres::Config,
    ) -> std::result::Result<postgres::Client, postgres::Error> {
        match self {
            Self::Plain => config.connect(postgres::NoTls),
            Self::Tls(tls) => config.connect(tls.clone()),
        }
    }
}

/// What is checked of the server's certificate.
enum Check {
    Nothing,
    Chain(RootCertStore),
    ChainAndName(RootCertStore),
}

/// Sets `config`'s TLS mode from `url`'s parameters and gives the connector to use with it.
pub(crate) fn configure(url: &StoreUrl, config: &mut postgres::Config) -> Result<Connector> {
    let mode = url.param("sslmode").unwrap_or("prefer");
    let unix_only = config
        .get_hosts()
        .iter()
        .all(|h| matches!(h, Host::Unix(_)));
    let (driver_mode, verifying) = match mode {
        "disable" => (SslMode::Disable, false),
        // The driver has no "plain first" mode: `allow` is encrypted when it can be.
        "allow" | "prefer" => (SslMode::Prefer, false),
        "require" => (SslMode::Require, false),
        "verify-ca" | "verify-full" => (SslMode::Require, true),
        other => {
            return Err(Error::invalid(
                "sslmode",
                format!(
                    "{other:?}: expected disable, allow, prefer, require, verify-ca or \
                     verify-full"
                ),
            ));
        }
    };
    let client_auth = client_certificate(url)?;
    let roots = match url.param("sslrootcert") {
        Some("system") if mode != "verify-full" => {
            return Err(Error::invalid(
                "sslrootcert",
                format!("\"system\" needs sslmode=verify-full (it is {mode:?}), as in libpq"),
            ));
        }
        Some("system") => Some(system_roots()?),
        Some(path) => Some(pem_roots(&PathBuf::from(path))?),
        None if verifying => match default_root_file() {
            Some(path) if path.exists() => Some(pem_roots(&path)?),
            _ => {
                return Err(Error::invalid(
                    "sslrootcert",
                    format!(
                        "sslmode={mode} checks the server's certificate against roots: give \
                         sslrootcert=<PEM file>, or sslrootcert=system for the system's \
                         (there is no ~/.postgresql/root.crt)"
                    ),
                ));
            }
        },
        None => None,
    };
    if driver_mode == SslMode::Disable || unix_only {
        config.ssl_mode(SslMode::Disable);
        return Ok(Connector::Plain);
    }
    config.ssl_mode(driver_mode);
    let check = match (mode, roots) {
        ("verify-full", Some(roots)) => Check::ChainAndName(roots),
        ("verify-ca" | "require", Some(roots)) => Check::Chain(roots),
        _ => Check::Nothing,
    };
    let provider = Arc::new(ring::default_provider());
    let builder = ClientConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .map_err(|e| tls_error("sslmode", &e))?;
    let builder = match check {
        Check::ChainAndName(roots) => builder.with_root_certificates(roots),
        Check::Chain(roots) => {
            let chain = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .map_err(|e| tls_error("sslrootcert", &e))?;
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(AnyName(chain)))
        }
        Check::Nothing => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(Unchecked(provider))),
    };
    let tls = match client_auth {
        Some((certs, key)) => builder
            .with_client_auth_cert(certs, key)
            .map_err(|e| tls_error("sslkey", &e))?,
        None => builder.with_no_client_auth(),
    };
    Ok(Connector::Tls(MakeRustlsConnect::new(tls)))
}

fn tls_error(field: &'static str, e: &dyn std::fmt::Display) -> Error {
    Error::invalid(field, e.to_string())
}

/// libpq's default root file, `~/.postgresql/root.crt`.
fn default_root_file() -> Option<PathBuf> {
    std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".postgresql/root.crt"))
}

fn pem_roots(path: &PathBuf) -> Result<RootCertStore> {
    let shown = path.display();
    let mut roots = RootCertStore::empty();
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| Error::invalid("sslrootcert", format!("{shown}: {e}")))?;
    for cert in certs {
        let cert = cert.map_err(|e| Error::invalid("sslrootcert", format!("{shown}: {e}")))?;
        roots
            .add(cert)
            .map_err(|e| Error::invalid("sslrootcert", format!("{shown}: {e}")))?;
    }
    if roots.is_empty() {
        return Err(Error::invalid(
            "sslrootcert",
            format!("{shown}: no PEM certificate in it"),
        ));
    }
    Ok(roots)
}

fn system_roots() -> Result<RootCertStore> {
    let found = rustls_native_certs::load_native_certs();
    let mut roots = RootCertStore::empty();
    let (added, _) = roots.add_parsable_certificates(found.certs);
    if added == 0 {
        let why = found
            .errors
            .first()
            .map_or_else(|| "none found".to_owned(), ToString::to_string);
        return Err(Error::invalid(
            "sslrootcert",
            format!("system: the system's root certificates could not be read ({why})"),
        ));
    }
    Ok(roots)
}

type ClientAuth = (Vec<CertificateDer<'static>>, PrivateKeyDer<'static>);

fn client_certificate(url: &StoreUrl) -> Result<Option<ClientAuth>> {
    let (cert, key) = match (url.param("sslcert"), url.param("sslkey")) {
        (None, None) => return Ok(None),
        (Some(cert), Some(key)) => (cert, key),
        (Some(_), None) | (None, Some(_)) => {
            return Err(Error::invalid(
                "sslcert",
                "a client certificate needs both sslcert and sslkey",
            ));
        }
    };
    let certs = CertificateDer::pem_file_iter(cert)
        .and_then(|certs| certs.collect::<std::result::Result<Vec<_>, _>>())
        .map_err(|e| Error::invalid("sslcert", format!("{cert}: {e}")))?;
    if certs.is_empty() {
        return Err(Error::invalid(
            "sslcert",
            format!("{cert}: no PEM certificate in it"),
        ));
    }
    let key = PrivateKeyDer::from_pem_file(key)
        .map_err(|e| Error::invalid("sslkey", format!("{key}: {e}")))?;
    Ok(Some((certs, key)))
}

/// `verify-ca` (and `require` with roots): the chain is checked, the name in it is not.
#[derive(Debug)]
struct AnyName(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for AnyName {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> std::result::Result<ServerCertVerified, rustls::Error> {
        // The name is checked after the chain: a name error means the chain was good.
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// `prefer` and `require` without roots: encrypted, the certificate not checked (libpq's
/// meaning); the handshake's signatures still are.
#[derive(Debug)]
struct Unchecked(Arc<CryptoProvider>);

impl ServerCertVerifier for Unchecked {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> std::result::Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
