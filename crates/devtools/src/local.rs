//! The `authz-local` commands behind `make demo`, `make dev` and `make down`.
//!
//! - `demo`: start the stack, run the scenario, print each step, stop;
//!   exits 1 when a step does not get its expected status.
//! - `up`: start the stack and keep it in the foreground until SIGINT or
//!   SIGTERM; writes `.local/stack.json` (its pid, the process groups it
//!   started, the URLs) once ready.
//! - `dev`: start `up` in the background, wait until it is ready and print
//!   ready-to-paste `curl` commands with an admin token.
//! - `down`: stop exactly what `dev` started, by the pids in `stack.json`.
//! - `token`: sign in at the stack's OpenID provider and print the access
//!   token.
//!
//! Settings come from the environment: `DYNAMODB_PORT` (8000),
//! `LAMBDA_PORT` (9000), `GATEWAY_PORT` (3000), `OIDC_PORT` (3001, the
//! OpenID provider), `TICKETS_PORT` (3002, the example tickets API),
//! `TICKETS_HTTP_PORT` (3003, the same as an HTTP API), `TABLE_NAME`
//! (`authz-local`), `ADMIN_EMAIL` (`admin@example.com`),
//! `AUTHORIZER_RESULT_TTL` (the gateway's result cache, 5 s) and
//! `CACHE_TTL_SECONDS` (the authorizer's decision cache, 5 s).

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use testkit::dynamodb_local::Storage;
use testkit::process;

use crate::oidc;
use crate::scenario::{self, ApiClient};
use crate::stack::{Database, Stack, StackOptions};

/// What `up` records once it is ready, for `dev`, `down` and `token`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StackFile {
    pub pid: u32,
    /// `(name, process-group id)` of every process group `up` started.
    pub groups: Vec<(String, u32)>,
    pub api_url: String,
    /// The example tickets API behind the same authorizer.
    pub tickets_url: String,
    /// The same example as an HTTP API.
    #[serde(default)]
    pub tickets_http_url: String,
    /// The admin console, served by the API.
    pub console_url: String,
    /// The OpenID provider's issuer URL.
    pub issuer: String,
    /// Every local provider's issuer URL (a second one with `{local2}`).
    #[serde(default)]
    pub issuers: Vec<String>,
    pub admin_user_id: String,
    pub admin_email: String,
    pub table: String,
    pub dynamodb_endpoint: String,
    pub lambda_endpoint: String,
}

fn setting<T: std::str::FromStr>(var: &str, default: T) -> Result<T, String> {
    match std::env::var(var) {
        Ok(v) if !v.trim().is_empty() => v
            .trim()
            .parse()
            .map_err(|_| format!("{var}={v:?} is not valid")),
        _ => Ok(default),
    }
}

/// The stack's options from the environment, for the repository at `root`.
pub fn options(root: &Path) -> Result<StackOptions, String> {
    let mut o = StackOptions::new(root);
    o.database = Database::Start {
        port: setting("DYNAMODB_PORT", 8000)?,
        storage: Storage::OnDisk(o.state_dir.join("dynamodb")),
    };
    o.lambda_port = setting("LAMBDA_PORT", 9000)?;
    o.gateway_port = setting("GATEWAY_PORT", 3000)?;
    o.oidc_port = setting("OIDC_PORT", 3001)?;
    o.tickets_port = setting("TICKETS_PORT", 3002)?;
    o.tickets_http_port = setting("TICKETS_HTTP_PORT", 3003)?;
    o.table = setting("TABLE_NAME", o.table.clone())?;
    o.admin_email = setting("ADMIN_EMAIL", o.admin_email.clone())?;
    o.result_ttl = Some(Duration::from_secs(setting("AUTHORIZER_RESULT_TTL", 5)?));
    o.decision_cache_seconds = setting("CACHE_TTL_SECONDS", 5)?;
    // As a deployment's TrustedIssuers, `{local}` (and `{local2}`) standing
    // for the local providers (docs/local-stack.md).
    o.trusted_issuers = match std::env::var("TRUSTED_ISSUERS_FILE") {
        Ok(path) if !path.trim().is_empty() => Some(
            std::fs::read_to_string(path.trim())
                .map_err(|e| format!("TRUSTED_ISSUERS_FILE={path}: {e}"))?,
        ),
        _ => std::env::var("TRUSTED_ISSUERS")
            .ok()
            .filter(|v| !v.trim().is_empty()),
    };
    Ok(o)
}

fn stack_file(options: &StackOptions) -> PathBuf {
    options.state_dir.join("stack.json")
}

fn read_stack_file(options: &StackOptions) -> Option<StackFile> {
    let text = std::fs::read_to_string(stack_file(options)).ok()?;
    serde_json::from_str(&text).ok()
}

fn print_step(line: &str) {
    println!("{line}");
}

fn progress(line: &str) {
    println!("· {line}");
}

/// JSON logs of this process (the gateway's request lines, the poller) go
/// to `name.log` in the state folder, so the terminal shows only the story.
pub fn log_to_file(options: &StackOptions, name: &str) -> Result<(), String> {
    let dir = options.state_dir.join("logs");
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let path = dir.join(format!("{name}.log"));
    let file = std::fs::File::options()
        .create(true)
        .append(true)
        .open(&path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    tracing_subscriber::fmt()
        .json()
        .with_max_level(authz_core::runtime::logging::level())
        .with_target(false)
        .with_writer(std::sync::Mutex::new(file))
        .try_init()
        .map_err(|e| e.to_string())
}

/// `demo`: the scenario against a fresh start of the stack.
pub async fn demo(options: StackOptions) -> ExitCode {
    if let Some(running) = read_stack_file(&options).filter(|s| process::alive(s.pid)) {
        eprintln!(
            "a local stack is already running (pid {}, {}): `make down` stops it",
            running.pid, running.api_url
        );
        return ExitCode::FAILURE;
    }
    let mut stack = match Stack::start(&options, &mut progress).await {
        Ok(s) => s,
        Err(e) => {
            eprintln!("the local stack did not start: {e}");
            return ExitCode::FAILURE;
        }
    };
    println!("\nscenario against {}:", stack.api_url);
    let api = ApiClient::new(&stack.api_url);
    let result = scenario::run(
        &api,
        &stack.issuer,
        &stack.admin_login,
        &stack.store,
        &stack.poller,
        print_step,
    )
    .await;
    let drained = stack.poller.drained(Duration::from_secs(60)).await;
    let dynamodb = stack.proxy.stats();
    println!(
        "\nauthorizer invocations: {} (the rest came from the gateway's result cache)\nstream: {} records delivered to recompute, {} retried batches, {} records given up{}\nDynamoDB requests allowed by template.yaml's policies: {}; denied: {}; transactions cancelled by conflicts: {}",
        stack.gateway.authorizer_calls(),
        stack.poller.records(),
        stack.poller.retries(),
        stack.poller.given_up(),
        if drained { "" } else { " (still busy after 60 s)" },
        dynamodb
            .allowed
            .iter()
            .map(|(function, n)| format!("{function} {n}"))
            .collect::<Vec<_>>()
            .join(", "),
        dynamodb.access_denied,
        dynamodb.transactions_cancelled,
    );
    stack.shutdown();
    let stream_ok = drained && stack.poller.given_up() == 0 && dynamodb.access_denied == 0;
    match result {
        Ok(report) if report.passed() && stream_ok => {
            println!("demo passed: every step got its expected status, no drift");
            ExitCode::SUCCESS
        }
        Ok(_) => {
            eprintln!(
                "demo FAILED: see the steps marked FAIL (logs in {})",
                options.state_dir.join("logs").display()
            );
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("demo FAILED: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `up`: the stack in the foreground until a signal.
pub async fn up(options: StackOptions) -> ExitCode {
    let mut stack = match Stack::start(&options, &mut progress).await {
        Ok(s) => s,
        Err(e) => {
            eprintln!("the local stack did not start: {e}");
            return ExitCode::FAILURE;
        }
    };
    let file = StackFile {
        pid: std::process::id(),
        groups: stack
            .groups()
            .iter()
            .map(|g| (g.name.to_string(), g.pgid))
            .collect(),
        api_url: stack.api_url.clone(),
        tickets_url: stack.tickets_url.clone(),
        tickets_http_url: stack.tickets_http_url.clone(),
        console_url: stack.console_url.clone(),
        issuer: stack.issuer.clone(),
        issuers: stack.issuers.clone(),
        admin_user_id: stack.admin_user_id.clone(),
        admin_email: options.admin_email.clone(),
        table: stack.table.clone(),
        dynamodb_endpoint: stack.dynamodb_endpoint.clone(),
        lambda_endpoint: stack.functions.endpoint().to_string(),
    };
    let path = stack_file(&options);
    if let Err(e) = std::fs::write(
        &path,
        serde_json::to_string_pretty(&file).expect("serializes"),
    ) {
        eprintln!("{}: {e}", path.display());
        stack.shutdown();
        return ExitCode::FAILURE;
    }
    println!("ready: {}", stack.api_url);
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .expect("install a SIGTERM handler");
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
    println!("stopping");
    stack.shutdown();
    let _ = std::fs::remove_file(&path);
    ExitCode::SUCCESS
}

/// `dev`: `up` in the background, then the commands to try it.
pub async fn dev(options: StackOptions) -> ExitCode {
    if let Some(running) = read_stack_file(&options).filter(|s| process::alive(s.pid)) {
        println!("already running (pid {})", running.pid);
        print_commands(&options, &running).await;
        return ExitCode::SUCCESS;
    }
    let _ = std::fs::remove_file(stack_file(&options));
    let log = options.state_dir.join("logs/stack.log");
    let spawned = (|| -> std::io::Result<u32> {
        std::fs::create_dir_all(log.parent().expect("a folder"))?;
        let out = std::fs::File::create(&log)?;
        let mut command = Command::new(std::env::current_exe()?);
        command
            .arg("up")
            .current_dir(&options.root)
            .stdin(Stdio::null())
            .stdout(out.try_clone()?)
            .stderr(out);
        // A session of its own: it outlives this command and the terminal.
        unsafe {
            use std::os::unix::process::CommandExt;
            command.pre_exec(|| {
                libc::setsid();
                Ok(())
            });
        }
        Ok(command.spawn()?.id())
    })();
    let pid = match spawned {
        Ok(pid) => pid,
        Err(e) => {
            eprintln!("cannot start the stack: {e}");
            return ExitCode::FAILURE;
        }
    };
    println!(
        "starting the local stack in the background (pid {pid}, log {})",
        log.display()
    );
    let started = Instant::now();
    // The background stack's progress lines, relayed as they come.
    let mut shown = 0;
    loop {
        if let Ok(text) = std::fs::read_to_string(&log) {
            if let Some(new) = text.get(shown..) {
                let complete = new.rfind('\n').map_or(0, |i| i + 1);
                for line in new[..complete].lines().filter(|l| l.starts_with("· ")) {
                    println!("{line}");
                }
                shown += complete;
            }
        }
        if let Some(file) = read_stack_file(&options).filter(|f| f.pid == pid) {
            print_commands(&options, &file).await;
            return ExitCode::SUCCESS;
        }
        if !process::alive(pid) || started.elapsed() > Duration::from_secs(30 * 60) {
            eprintln!(
                "the local stack did not start; its log:\n{}",
                std::fs::read_to_string(&log).unwrap_or_default()
            );
            return ExitCode::FAILURE;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

async fn print_commands(options: &StackOptions, file: &StackFile) {
    let token = match oidc::sign_in(&file.issuer, &file.admin_email).await {
        Ok(t) => t,
        Err(e) => {
            eprintln!(
                "cannot sign in as {} at {}: {e}",
                file.admin_email, file.issuer
            );
            return;
        }
    };
    let api = &file.api_url;
    let demo = match demo_ids(&ApiClient::new(api), &token, &file.issuer).await {
        Ok(ids) => ids,
        Err(e) => {
            eprintln!("cannot create the demo tenant, user and role: {e}");
            return;
        }
    };
    println!(
        r#"
The local stack is up: gateway {api}, functions {lambda}, DynamoDB Local {ddb} (table {table}),
OpenID provider {issuer} (any login name signs in; the admin is {email}).

The admin console: {console}   (sign in as {email}; any other name signs in as someone else)

Logs are in {logs}; `make down` stops it, `make reset` also deletes its data.
A demo tenant (acme), user (dana, her identity at the provider linked) and role (viewer) exist.

export API={api}
export TOKEN={token}   # {email} signed in, platform-admin, valid 1 h (`make token` for another)

curl -s "$API/tenants" -H "Authorization: Bearer $TOKEN"
curl -s -X PUT "$API/tenants/{tenant}/members/{user}" -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' -d '{{"roles":["{role}"]}}'
curl -s "$API/tenants/{tenant}/members/{user}/permissions" -H "Authorization: Bearer $TOKEN"
curl -s "$API/tenants/{tenant}" -H "Authorization: Bearer $(make -s token LOGIN=dana)"    # as dana, once she is a member
curl -s -i "$API/tenants"    # no token: 401
curl -s "{tickets}/tenants/{tenant}/tickets" -H "Authorization: Bearer $(make -s token LOGIN=dana)"    # the example tickets API, behind the same authorizer (docs/authorizer.md)
curl -s "{tickets_http}/tenants/{tenant}/tickets" -H "Authorization: Bearer $(make -s token LOGIN=dana)"    # the same example as an HTTP API

Someone else: `make token LOGIN=erin` signs in as erin (sub "erin"); sign up with
curl -s -X POST "$API/users/me" -H "Authorization: Bearer $(make -s token LOGIN=erin)""#,
        tickets = file.tickets_url,
        tickets_http = file.tickets_http_url,
        console = file.console_url,
        lambda = file.lambda_endpoint,
        ddb = file.dynamodb_endpoint,
        table = file.table,
        logs = options.state_dir.join("logs").display(),
        email = file.admin_email,
        issuer = file.issuer,
        tenant = demo.tenant,
        user = demo.user,
        role = demo.role,
    );
}

/// The ids `make dev`'s commands use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DemoIds {
    pub tenant: String,
    pub user: String,
    pub role: String,
}

/// Creates the demo tenant `acme`, user `dana@example.com` (her identity
/// `dana` at `issuer` linked) and tenant role `viewer` through the API as
/// the admin (`token`), or finds them when a previous `make dev` made them.
pub async fn demo_ids(api: &ApiClient, token: &str, issuer: &str) -> Result<DemoIds, String> {
    let made = |path: &'static str, body: serde_json::Value, found: String, id: &'static str| async move {
        let created = api
            .call("POST", path, Some(token), Some(&body), None)
            .await?;
        let answer = match created.status {
            201 => created,
            409 => api.call("GET", &found, Some(token), None, None).await?,
            other => return Err(format!("POST {path}: {other} {}", created.body)),
        };
        answer.body[id]
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| format!("{path}: no {id} in {}", answer.body))
    };
    Ok(DemoIds {
        tenant: made(
            "/tenants",
            serde_json::json!({"name": "acme"}),
            "/tenants/by-name/acme".into(),
            "tenantId",
        )
        .await?,
        user: made(
            "/users",
            serde_json::json!({
                "email": "dana@example.com",
                "identities": [{"issuer": issuer, "subject": "dana"}],
            }),
            "/users/by-email/dana@example.com".into(),
            "userId",
        )
        .await?,
        role: made(
            "/roles",
            serde_json::json!({"name": "viewer", "scope": "tenant", "permissions": ["tenant:read", "member:read", "ticket:read"]}),
            "/roles/by-name/tenant/viewer".into(),
            "roleId",
        )
        .await?,
    })
}

/// `with-dynamodb -- COMMAND...`: DynamoDB Local alone, in memory on a free
/// port, for the length of one command run with `DYNAMODB_LOCAL_ENDPOINT`
/// naming it (the test harness then uses it instead of starting its own).
/// The command starts beside the server: cargo's up-to-date check and the
/// listing of the tests overlap the JVM's start-up, and the harness waits
/// for the server before its first request. A server that never listens
/// interrupts the command (as Ctrl-C would) and says why.
pub fn with_dynamodb(root: &Path, command: &[String]) -> ExitCode {
    let Some((program, args)) = command.split_first() else {
        eprintln!("with-dynamodb: no command given");
        return ExitCode::from(2);
    };
    let jar_dir = testkit::dynamodb_local::jar_dir(root);
    let port = testkit::dynamodb_local::free_port();
    let server = match testkit::dynamodb_local::launch(&jar_dir, port, &Storage::InMemory, None) {
        Ok(server) => server,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    let child = Command::new(program)
        .args(args)
        .env("DYNAMODB_LOCAL_ENDPOINT", &server.endpoint)
        .spawn();
    let status = child.and_then(|mut child| {
        if let Err(e) = server.ready(None) {
            eprintln!("{e}");
            // Our own child, not yet reaped: the pid is still its own.
            process::interrupt(child.id());
            child.wait()?;
            return Ok(None);
        }
        child.wait().map(Some)
    });
    process::stop_group(server.pid, Duration::from_secs(5));
    match status {
        Ok(Some(s)) => ExitCode::from(s.code().map_or(1, |c| c.clamp(0, 255) as u8)),
        Ok(None) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("{program}: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `token [--login NAME] [--issuer N]`: signs in at the running stack's
/// provider (the `N`th, 1 by default: 2 is `{local2}`) as NAME (the admin
/// by default) and prints the access token.
pub async fn token(options: StackOptions, login: Option<String>, issuer: usize) -> ExitCode {
    let Some(file) = read_stack_file(&options).filter(|f| process::alive(f.pid)) else {
        eprintln!("no local stack is running: `make dev` starts one");
        return ExitCode::FAILURE;
    };
    let login = login.unwrap_or_else(|| file.admin_email.clone());
    let Some(at) = file
        .issuers
        .get(issuer.saturating_sub(1))
        .or((issuer == 1).then_some(&file.issuer))
    else {
        eprintln!(
            "the stack runs {} OpenID provider(s): TRUSTED_ISSUERS names {{local2}} to start a second",
            file.issuers.len().max(1)
        );
        return ExitCode::FAILURE;
    };
    match oidc::sign_in(at, &login).await {
        Ok(token) => {
            println!("{token}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}

/// What a recorded process must look like before it is signalled, so a
/// recycled pid is never killed.
fn expected_command(name: &str) -> &'static str {
    match name {
        "dynamodb-local" => "DynamoDBLocal.jar",
        "cargo-lambda" => "cargo-lambda",
        "oidc-provider" => "provider.mjs",
        _ => "authz-local",
    }
}

fn ours(pid: u32, name: &str) -> bool {
    process::cmdline(pid).is_some_and(|c| c.contains(expected_command(name)))
}

/// `down`: stops `up` (which stops its groups), then any group left.
pub fn down(options: StackOptions) -> ExitCode {
    let path = stack_file(&options);
    let Some(file) = read_stack_file(&options) else {
        println!("nothing to stop ({} does not exist)", path.display());
        return ExitCode::SUCCESS;
    };
    if process::alive(file.pid) && ours(file.pid, "up") {
        unsafe { libc::kill(file.pid as i32, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(30);
        while process::alive(file.pid) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(100));
        }
        if process::alive(file.pid) {
            unsafe { libc::kill(file.pid as i32, libc::SIGKILL) };
        }
        println!("stopped authz-local up (pid {})", file.pid);
    }
    for (name, pgid) in &file.groups {
        if process::group_alive(*pgid) && (!process::alive(*pgid) || ours(*pgid, name)) {
            process::stop_group(*pgid, Duration::from_secs(5));
            println!("stopped {name} (process group {pgid})");
        }
    }
    let _ = std::fs::remove_file(&path);
    ExitCode::SUCCESS
}
