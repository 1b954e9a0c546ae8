//! A loopback TCP proxy that holds each request for a fixed time before
//! passing it on: a stand-in for the network distance to DynamoDB in the
//! cold-start runs. A request is the first bytes a client sends after a
//! pause (its later bytes follow within microseconds); answers pass at once.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Bytes from a client this long after its previous bytes start a request.
const PAUSE: Duration = Duration::from_millis(2);

/// The proxy; it runs until the process ends.
pub struct DelayProxy {
    /// `http://127.0.0.1:<port>`: an endpoint URL for the SDK.
    pub endpoint: String,
}

impl DelayProxy {
    /// Proxies to `target` (an `http://host:port` endpoint), holding each
    /// request for `delay`.
    pub async fn start(target: &str, delay: Duration) -> Result<Self, String> {
        let upstream: SocketAddr = target
            .trim_start_matches("http://")
            .trim_end_matches('/')
            .parse()
            .map_err(|e| format!("{target}: {e}"))?;
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(|e| format!("bind: {e}"))?;
        let endpoint = format!(
            "http://{}",
            listener.local_addr().map_err(|e| e.to_string())?
        );
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let Ok(server) = TcpStream::connect(upstream).await else {
                        return;
                    };
                    let _ = (client.set_nodelay(true), server.set_nodelay(true));
                    let (mut client_read, mut client_write) = client.into_split();
                    let (mut server_read, mut server_write) = server.into_split();
                    let requests = async move {
                        let mut buf = vec![0u8; 64 * 1024];
                        let mut last: Option<Instant> = None;
                        loop {
                            let n = match client_read.read(&mut buf).await {
                                Ok(0) | Err(_) => break,
                                Ok(n) => n,
                            };
                            if last.is_none_or(|t| t.elapsed() > PAUSE) {
                                tokio::time::sleep(delay).await;
                            }
                            if server_write.write_all(&buf[..n]).await.is_err() {
                                break;
                            }
                            last = Some(Instant::now());
                        }
                        let _ = server_write.shutdown().await;
                    };
                    let answers = async move {
                        let _ = tokio::io::copy(&mut server_read, &mut client_write).await;
                        let _ = client_write.shutdown().await;
                    };
                    tokio::join!(requests, answers);
                });
            }
        });
        Ok(Self { endpoint })
    }
}
