//! Child processes of the local stack and the test harness: each in a
//! process group of its own (so it and everything it starts stop together),
//! tied to this process's life by the kernel's parent-death signal, with its
//! output in a log file (never an inherited pipe, which a stray grandchild
//! could hold open).

use std::fs::File;
use std::io;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

type SpawnRequest = (Command, mpsc::Sender<io::Result<u32>>);

/// The parent-death signal fires when the *thread* that forked the child
/// exits, so every child is forked by one thread that lives as long as the
/// process.
fn spawner() -> &'static Mutex<mpsc::Sender<SpawnRequest>> {
    static SPAWNER: OnceLock<Mutex<mpsc::Sender<SpawnRequest>>> = OnceLock::new();
    SPAWNER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<SpawnRequest>();
        std::thread::Builder::new()
            .name("child-spawner".into())
            .spawn(move || {
                for (mut command, reply) in rx {
                    let _ = reply.send(command.spawn().map(|child| child.id()));
                }
            })
            .expect("spawn the child-spawner thread");
        Mutex::new(tx)
    })
}

/// Starts `command` in a new process group, killed with this process,
/// stdin closed and stdout/stderr appended to `log` (discarded without one).
/// Returns its pid, which is also its process-group id.
pub fn spawn(mut command: Command, log: Option<&Path>) -> io::Result<u32> {
    let (stdout, stderr) = match log {
        Some(path) => {
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir)?;
            }
            let file = File::options().create(true).append(true).open(path)?;
            (Stdio::from(file.try_clone()?), Stdio::from(file))
        }
        None => (Stdio::null(), Stdio::null()),
    };
    command
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(stderr)
        .process_group(0);
    // SAFETY: prctl is async-signal-safe; nothing else runs between fork
    // and exec.
    unsafe {
        command.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let (reply, answer) = mpsc::channel();
    spawner()
        .lock()
        .expect("spawner lock")
        .send((command, reply))
        .map_err(|_| io::Error::other("the child-spawner thread is gone"))?;
    answer
        .recv()
        .map_err(|_| io::Error::other("the child-spawner thread is gone"))?
}

/// Whether any process of group `pgid` is alive.
pub fn group_alive(pgid: u32) -> bool {
    // Signal 0 checks for existence without sending anything.
    unsafe { libc::kill(-(pgid as i32), 0) == 0 }
}

/// Interrupts process `pid` as Ctrl-C would (SIGINT).
pub fn interrupt(pid: u32) {
    // A signal only: no memory is touched.
    unsafe { libc::kill(pid as i32, libc::SIGINT) };
}

/// Whether process `pid` is alive (and not a zombie).
pub fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the parenthesised command name.
        Ok(stat) => stat
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| !rest.starts_with('Z')),
        Err(_) => false,
    }
}

/// The command line of `pid`, arguments joined by spaces.
pub fn cmdline(pid: u32) -> Option<String> {
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    Some(
        raw.split(|b| *b == 0)
            .map(|part| String::from_utf8_lossy(part).into_owned())
            .collect::<Vec<_>>()
            .join(" "),
    )
}

/// Stops process group `pgid`: SIGTERM, then SIGKILL for whatever is left
/// after `grace`, and returns once the group is gone (or a further
/// [`KILLED_GONE_WITHIN`] has passed: a killed process leaves its group
/// only when its parent, or init for an orphan, has reaped it). Reaps the
/// leader when it is this process's child.
pub fn stop_group(pgid: u32, grace: Duration) {
    let group = -(pgid as i32);
    unsafe { libc::kill(group, libc::SIGTERM) };
    let gone_by = |deadline: Instant| {
        while group_alive(pgid) && Instant::now() < deadline {
            reap(pgid);
            std::thread::sleep(Duration::from_millis(50));
        }
        !group_alive(pgid)
    };
    if !gone_by(Instant::now() + grace) {
        unsafe { libc::kill(group, libc::SIGKILL) };
        gone_by(Instant::now() + KILLED_GONE_WITHIN);
    }
    reap(pgid);
}

/// How long [`stop_group`] waits for a killed group to be gone.
pub const KILLED_GONE_WITHIN: Duration = Duration::from_secs(5);

/// Collects the exit status of `pid` if it is a finished child of ours.
fn reap(pid: u32) {
    let mut status = 0;
    unsafe { libc::waitpid(pid as i32, &mut status, libc::WNOHANG) };
}
