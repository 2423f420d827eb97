//! TLS for every check that speaks it (HTTPS, TCP with TLS, WSS): the one rustls client
//! configuration builder and the one certificate clock.
//!
//! Each handshake gets a configuration of its own whose verifier records the leaf certificate
//! before verifying it, so a check can say how many days a certificate has left even when
//! verification rejects it (an expired certificate). With `verify: false` the chain is not
//! validated, but the handshake signatures still are, so the server must hold the key of the
//! certificate it presents.
//!
//! Days left are counted from the time the caller passes ([`crate::RunOptions::now`]), never
//! from the wall clock: the server fills it from its clock, so tests can drive it.

use std::sync::{Arc, Mutex, OnceLock};

use chrono::{DateTime, Utc};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::{DigitallySignedStruct, SignatureScheme};
use rustls_pki_types::{CertificateDer, ServerName, UnixTime};

/// Why no client configuration could be built.
#[derive(Debug, Clone, thiserror::Error)]
#[error("TLS setup failed: {0}")]
pub struct SetupError(String);

/// The ring provider is named explicitly so the engine never depends on which provider some
/// other part of the process installed as the default.
fn provider() -> Arc<CryptoProvider> {
    static PROVIDER: OnceLock<Arc<CryptoProvider>> = OnceLock::new();
    PROVIDER
        .get_or_init(|| Arc::new(rustls::crypto::ring::default_provider()))
        .clone()
}

/// Loaded once per process: building it is not free and it never changes.
fn root_store() -> Arc<rustls::RootCertStore> {
    static ROOTS: OnceLock<Arc<rustls::RootCertStore>> = OnceLock::new();
    ROOTS
        .get_or_init(|| {
            Arc::new(rustls::RootCertStore::from_iter(
                webpki_roots::TLS_SERVER_ROOTS.iter().cloned(),
            ))
        })
        .clone()
}

/// A client configuration for one handshake (`verify`: validate the chain against the web PKI
/// roots) and the verifier that will hold the leaf certificate once the server sent it.
pub(crate) fn client_config(
    verify: bool,
) -> Result<(rustls::ClientConfig, Arc<LeafCapture>), SetupError> {
    let provider = provider();
    let inner: Option<Arc<dyn ServerCertVerifier>> = if verify {
        let v = rustls::client::WebPkiServerVerifier::builder_with_provider(
            root_store(),
            provider.clone(),
        )
        .build()
        .map_err(|e| SetupError(e.to_string()))?;
        Some(v)
    } else {
        None
    };
    let capture = Arc::new(LeafCapture {
        inner,
        provider: provider.clone(),
        leaf: Mutex::new(None),
    });
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| SetupError(e.to_string()))?
        .dangerous()
        .with_custom_certificate_verifier(capture.clone())
        .with_no_client_auth();
    Ok((config, capture))
}

/// Days until the certificate's `notAfter` at `now`, rounded down (negative once expired);
/// `None` when the certificate cannot be parsed.
pub fn cert_days_left(der: &[u8], now: DateTime<Utc>) -> Option<i64> {
    let (_, cert) = x509_parser::parse_x509_certificate(der).ok()?;
    let not_after = cert.validity().not_after.timestamp();
    Some((not_after - now.timestamp()).div_euclid(86_400))
}

/// Wraps the real verifier (or none, with `verify: false`) to keep the leaf certificate, so
/// its expiry is known even when verification rejects it.
#[derive(Debug)]
pub(crate) struct LeafCapture {
    inner: Option<Arc<dyn ServerCertVerifier>>,
    provider: Arc<CryptoProvider>,
    leaf: Mutex<Option<Vec<u8>>>,
}

impl LeafCapture {
    /// The leaf certificate the server presented (DER), once the handshake got that far.
    pub(crate) fn leaf(&self) -> Option<Vec<u8>> {
        self.leaf.lock().ok().and_then(|mut slot| slot.take())
    }
}

impl ServerCertVerifier for LeafCapture {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        if let Ok(mut slot) = self.leaf.lock() {
            *slot = Some(end_entity.as_ref().to_vec());
        }
        match &self.inner {
            Some(v) => {
                v.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
            }
            None => Ok(ServerCertVerified::assertion()),
        }
    }

    // Signatures are always checked, even without chain validation: the handshake must still
    // prove the server holds the certificate's key.
    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}
