//! The local token issuer: an ES256 (P-256) key made on first use and kept
//! in the stack's state folder, its JWKS document (served by the local
//! gateway at `/.well-known/jwks.json`), and tokens for users, signed the
//! way a real identity provider signs them.

use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{EcdsaKeyPair, KeyPair, ECDSA_P256_SHA256_FIXED_SIGNING};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use jsonwebtoken::{encode, Algorithm, EncodingKey, Header};
use serde_json::json;

/// Signs tokens for one issuer and audience.
pub struct LocalIssuer {
    key: EncodingKey,
    kid: String,
    jwks: String,
    pub issuer: String,
    pub audience: String,
}

impl LocalIssuer {
    /// An issuer with a new key that lives only in memory.
    pub fn generate(issuer: &str, audience: &str) -> Result<Self, String> {
        let pkcs8 =
            EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &SystemRandom::new())
                .map_err(|_| "cannot generate a P-256 key".to_string())?;
        Self::from_pkcs8(pkcs8.as_ref(), issuer, audience)
    }

    /// The issuer whose PKCS#8 key is in `path`, creating the key (mode
    /// 0600) when the file does not exist.
    pub fn load_or_create(path: &Path, issuer: &str, audience: &str) -> Result<Self, String> {
        if let Ok(der) = std::fs::read(path) {
            return Self::from_pkcs8(&der, issuer, audience)
                .map_err(|e| format!("{}: {e}", path.display()));
        }
        let pkcs8 =
            EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &SystemRandom::new())
                .map_err(|_| "cannot generate a P-256 key".to_string())?;
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        }
        {
            use std::io::Write;
            use std::os::unix::fs::OpenOptionsExt;
            let mut file = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(path)
                .map_err(|e| format!("{}: {e}", path.display()))?;
            file.write_all(pkcs8.as_ref())
                .map_err(|e| format!("{}: {e}", path.display()))?;
        }
        Self::from_pkcs8(pkcs8.as_ref(), issuer, audience)
    }

    fn from_pkcs8(der: &[u8], issuer: &str, audience: &str) -> Result<Self, String> {
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, der)
            .map_err(|e| format!("not a P-256 PKCS#8 key: {e}"))?;
        // An uncompressed point: 0x04, then X and Y, 32 bytes each.
        let point = pair.public_key().as_ref();
        if point.len() != 65 || point[0] != 4 {
            return Err("unexpected public key encoding".into());
        }
        let (x, y) = (&point[1..33], &point[33..]);
        let thumb = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, point);
        let kid = format!("local-{}", &URL_SAFE_NO_PAD.encode(thumb.as_ref())[..12]);
        let jwks = json!({"keys": [{
            "kty": "EC",
            "crv": "P-256",
            "alg": "ES256",
            "use": "sig",
            "kid": kid,
            "x": URL_SAFE_NO_PAD.encode(x),
            "y": URL_SAFE_NO_PAD.encode(y),
        }]})
        .to_string();
        Ok(Self {
            key: EncodingKey::from_ec_der(der),
            kid,
            jwks,
            issuer: issuer.to_string(),
            audience: audience.to_string(),
        })
    }

    /// The public keys as a JWKS document.
    pub fn jwks(&self) -> &str {
        &self.jwks
    }

    /// A token for `user_id` (the `sub` claim) valid for `ttl`.
    pub fn token(&self, user_id: &str, ttl: Duration) -> String {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        let mut header = Header::new(Algorithm::ES256);
        header.kid = Some(self.kid.clone());
        let claims = json!({
            "iss": self.issuer,
            "aud": self.audience,
            "sub": user_id,
            "iat": now,
            "exp": now + ttl.as_secs(),
        });
        encode(&header, &claims, &self.key).expect("an ES256 key signs")
    }
}
