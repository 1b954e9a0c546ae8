//! The trust roots of every TLS connection the functions open (DynamoDB
//! through the SDK, the issuer's JWKS): one CA bundle file, read and parsed
//! once per process, instead of the platform probe's scan of a certificate
//! directory (on Debian some 300 files; `make bench` measures both, see
//! docs/benchmarks.md).
//!
//! The bundle is `SSL_CERT_FILE` when set (a private CA goes there), else
//! the first of the platforms' usual bundle files that exists (Amazon
//! Linux 2023, which Lambda's `provided.al2023` runtime is, first), else the
//! platform probe. `SSL_CERT_DIR` alone means the probe, which reads it.
//! The SDK's HTTPS client ([`crate::runtime::aws::sdk_config`]) and the JWKS
//! client ([`TrustRoots::rustls_config`]) are built from the same roots
//! with the same crypto provider (aws-lc-rs); they are two clients because
//! the SDK's takes its roots as PEM, not as a rustls configuration, and
//! parses them again (docs/benchmarks.md: what that costs a cold start).

use std::path::Path;
use std::sync::{Arc, OnceLock};

use aws_smithy_http_client::tls::{self, rustls_provider::CryptoMode, TlsContext, TrustStore};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;

use crate::runtime::config::ConfigError;

/// The environment variable naming a CA bundle (PEM) to trust instead of
/// the platform's.
pub const SSL_CERT_FILE: &str = "SSL_CERT_FILE";

/// OpenSSL's directory of trusted certificates: when it alone is set, the
/// platform probe (which reads it) decides, as it did before this module.
pub const SSL_CERT_DIR: &str = "SSL_CERT_DIR";

/// The platforms' bundle files, in the order they are looked for: Amazon
/// Linux (Lambda's `provided.al2023`), Debian and Ubuntu, Alpine and macOS.
pub const PLATFORM_BUNDLES: &[&str] = &[
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/ssl/cert.pem",
];

/// Certificates to trust, as PEM (what the SDK takes) and parsed (what
/// rustls takes).
pub struct TrustRoots {
    /// `None`: the platform probe's roots (no bundle file was found).
    pem: Option<Vec<u8>>,
    roots: Arc<rustls::RootCertStore>,
    /// Where they came from, for logs and errors.
    pub source: String,
}

impl TrustRoots {
    /// The certificates of a PEM bundle: every `CERTIFICATE` section must
    /// parse as a trust anchor (the SDK's client would panic on one that
    /// does not), and there must be at least one.
    pub fn from_pem(pem: Vec<u8>, source: &str) -> Result<Self, String> {
        let certs = CertificateDer::pem_slice_iter(&pem)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("{source}: not a PEM certificate bundle: {e}"))?;
        if certs.is_empty() {
            return Err(format!("{source}: holds no PEM certificate"));
        }
        let mut roots = rustls::RootCertStore::empty();
        for (i, cert) in certs.into_iter().enumerate() {
            roots
                .add(cert)
                .map_err(|e| format!("{source}: certificate {}: {e}", i + 1))?;
        }
        Ok(Self {
            pem: Some(pem),
            roots: Arc::new(roots),
            source: source.to_string(),
        })
    }

    /// A bundle file.
    pub fn from_file(path: &Path) -> Result<Self, String> {
        let pem = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
        Self::from_pem(pem, &path.display().to_string())
    }

    /// The platform probe's roots (a directory scan on most Linux systems).
    pub fn platform_probe() -> Self {
        let found = rustls_native_certs::load_native_certs();
        if !found.errors.is_empty() {
            tracing::warn!(errors = ?found.errors, "reading the platform's root certificates");
        }
        let mut roots = rustls::RootCertStore::empty();
        roots.add_parsable_certificates(found.certs);
        Self {
            pem: None,
            roots: Arc::new(roots),
            source: "the platform's certificate probe".into(),
        }
    }

    /// No roots at all: every TLS connection is refused. What an unusable
    /// `SSL_CERT_FILE` leaves, so that it never widens trust to the
    /// platform's roots.
    fn none(source: String) -> Self {
        Self {
            pem: Some(Vec::new()),
            roots: Arc::new(rustls::RootCertStore::empty()),
            source,
        }
    }

    /// The roots `lookup` (the environment) selects: `SSL_CERT_FILE`, else
    /// the probe if `SSL_CERT_DIR` is set, else the first platform bundle
    /// that reads, else the probe.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        if let Some(path) = lookup(SSL_CERT_FILE) {
            return Self::from_file(Path::new(&path))
                .map_err(|reason| ConfigError::new(SSL_CERT_FILE, reason));
        }
        if lookup(SSL_CERT_DIR).is_some() {
            return Ok(Self::platform_probe());
        }
        for path in PLATFORM_BUNDLES {
            if Path::new(path).exists() {
                match Self::from_file(Path::new(path)) {
                    Ok(roots) => return Ok(roots),
                    Err(e) => tracing::warn!(error = %e, "skipping a platform bundle"),
                }
            }
        }
        Ok(Self::platform_probe())
    }

    /// The process's roots, read from the environment on first use. An
    /// unusable `SSL_CERT_FILE` (see [`check`], which start-up calls) is
    /// logged and trusts nothing.
    pub fn global() -> &'static TrustRoots {
        static ROOTS: OnceLock<TrustRoots> = OnceLock::new();
        ROOTS.get_or_init(|| {
            Self::from_lookup(|k| std::env::var(k).ok()).unwrap_or_else(|e| {
                tracing::error!(error = %e, "no TLS connection will be trusted");
                Self::none(e.to_string())
            })
        })
    }

    /// How many certificates are trusted.
    pub fn len(&self) -> usize {
        self.roots.len()
    }

    pub fn is_empty(&self) -> bool {
        self.roots.is_empty()
    }

    /// A rustls client configuration trusting these roots (aws-lc-rs, the
    /// SDK's provider; TLS 1.2 and 1.3).
    pub fn rustls_config(&self) -> rustls::ClientConfig {
        rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::aws_lc_rs::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .expect("aws-lc-rs supports the default protocol versions")
        .with_root_certificates(self.roots.clone())
        .with_no_client_auth()
    }

    /// The SDK's HTTPS client (its own hyper + rustls stack, aws-lc-rs)
    /// trusting these roots.
    pub fn sdk_http_client(&self) -> aws_smithy_runtime_api::client::http::SharedHttpClient {
        let trust = match &self.pem {
            Some(pem) => TrustStore::empty().with_pem_certificate(pem.clone()),
            None => TrustStore::default(),
        };
        let context = TlsContext::builder()
            .with_trust_store(trust)
            .build()
            .expect("a TLS context with a trust store builds");
        aws_smithy_http_client::Builder::new()
            .tls_provider(tls::Provider::Rustls(CryptoMode::AwsLc))
            .tls_context(context)
            .build_https()
    }
}

/// Start-up's check of the TLS setting: `SSL_CERT_FILE`, when set, names a
/// file that can be read (its certificates are parsed on first use).
pub fn check(lookup: impl Fn(&str) -> Option<String>) -> Result<(), ConfigError> {
    let Some(path) = lookup(SSL_CERT_FILE) else {
        return Ok(());
    };
    match std::fs::metadata(&path) {
        Ok(m) if m.is_file() => Ok(()),
        Ok(_) => Err(ConfigError::new(
            SSL_CERT_FILE,
            format!("{path}: not a file"),
        )),
        Err(e) => Err(ConfigError::new(SSL_CERT_FILE, format!("{path}: {e}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bundle() -> Option<&'static str> {
        PLATFORM_BUNDLES
            .iter()
            .copied()
            .find(|p| Path::new(p).exists())
    }

    #[test]
    fn ssl_cert_file_is_the_bundle_and_a_bad_one_is_refused_by_name() {
        let dir = std::env::temp_dir().join(format!("tls-{}", ulid::Ulid::new()));
        std::fs::create_dir_all(&dir).unwrap();
        let empty = dir.join("empty.pem");
        std::fs::write(&empty, "no certificates here\n").unwrap();
        let lookup = |path: &Path| {
            let path = path.display().to_string();
            move |k: &str| (k == SSL_CERT_FILE).then(|| path.clone())
        };
        let err = TrustRoots::from_lookup(lookup(&empty)).err().unwrap();
        assert_eq!(err.var, SSL_CERT_FILE);
        assert!(err.reason.contains("holds no PEM certificate"), "{err}");

        let missing = dir.join("missing.pem");
        let err = check(lookup(&missing)).unwrap_err();
        assert_eq!(err.var, SSL_CERT_FILE);
        assert!(err.reason.contains("missing.pem"), "{err}");
        assert_eq!(check(lookup(&empty)), Ok(()));
        assert_eq!(check(|_| None), Ok(()));

        let broken = dir.join("broken.pem");
        std::fs::write(
            &broken,
            "-----BEGIN CERTIFICATE-----\n!!!!\n-----END CERTIFICATE-----\n",
        )
        .unwrap();
        let err = TrustRoots::from_lookup(lookup(&broken)).err().unwrap();
        assert!(err.reason.contains("not a PEM certificate bundle"), "{err}");

        // Valid PEM, but not a certificate any verifier could use.
        let not_a_cert = dir.join("not-a-cert.pem");
        std::fs::write(
            &not_a_cert,
            "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
        )
        .unwrap();
        let err = TrustRoots::from_lookup(lookup(&not_a_cert)).err().unwrap();
        assert!(err.reason.contains("certificate 1:"), "{err}");

        // SSL_CERT_DIR alone leaves the choice to the probe, which reads it.
        let probe = TrustRoots::from_lookup(|k| (k == SSL_CERT_DIR).then(|| "/nowhere".into()));
        assert_eq!(probe.unwrap().source, "the platform's certificate probe");

        if let Some(platform) = bundle() {
            let roots = TrustRoots::from_lookup(lookup(Path::new(platform))).unwrap();
            assert!(roots.len() > 10, "{} roots", roots.len());
            assert_eq!(roots.source, platform);
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn without_ssl_cert_file_the_platform_bundle_is_read() {
        let roots = TrustRoots::from_lookup(|_| None).unwrap();
        assert!(!roots.is_empty());
        match bundle() {
            Some(platform) => assert_eq!(roots.source, platform),
            None => assert_eq!(roots.source, "the platform's certificate probe"),
        }
    }
}
