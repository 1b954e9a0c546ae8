//! A TLS front for loopback servers in tests: a private certificate
//! authority made at start, a certificate for `127.0.0.1` it signs, and a
//! proxy that ends TLS and passes the bytes to a plain upstream (DynamoDB
//! Local, a JWKS server). Clients trust it only if given the CA.

use std::net::SocketAddr;
use std::sync::Arc;

use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;

/// The running front; it serves until the process ends.
pub struct TlsFront {
    /// `https://127.0.0.1:PORT`.
    pub origin: String,
    /// The private CA's certificate (PEM): what a client must trust.
    pub ca_pem: String,
}

impl TlsFront {
    /// Ends TLS on a free loopback port and forwards to `upstream`
    /// (`http://host:port` or `host:port`).
    pub async fn start(upstream: &str) -> Self {
        let upstream: SocketAddr = upstream
            .trim_start_matches("http://")
            .trim_end_matches('/')
            .parse()
            .expect("the upstream is host:port");
        let mut ca = CertificateParams::new(Vec::<String>::new()).expect("CA parameters");
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.distinguished_name
            .push(DnType::CommonName, "authz test CA");
        let ca = CertifiedIssuer::self_signed(ca, KeyPair::generate().expect("a CA key"))
            .expect("the CA signs itself");
        let key = KeyPair::generate().expect("a server key");
        let server = CertificateParams::new(vec!["127.0.0.1".to_string()])
            .expect("server parameters")
            .signed_by(&key, &ca)
            .expect("the CA signs the server");
        let config = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::aws_lc_rs::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .expect("default protocol versions")
        .with_no_client_auth()
        .with_single_cert(
            vec![CertificateDer::from(server.der().to_vec())],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
        )
        .expect("a server certificate and key");
        let acceptor = TlsAcceptor::from(Arc::new(config));
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let origin = format!("https://{}", listener.local_addr().expect("an address"));
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    let Ok(mut tls) = acceptor.accept(client).await else {
                        return;
                    };
                    let Ok(mut plain) = TcpStream::connect(upstream).await else {
                        return;
                    };
                    let _ = tokio::io::copy_bidirectional(&mut tls, &mut plain).await;
                });
            }
        });
        Self {
            origin,
            ca_pem: ca.pem(),
        }
    }
}
