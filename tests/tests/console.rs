//! The admin console in a real browser against the local stack: Debian's
//! chromium, driven by playwright-core (`console/e2e/console.mjs`), signs
//! in at the stack's OpenID provider as the platform admin and as a tenant
//! admin, does each one's daily work through the console's screens, and
//! checks every screen with axe-core. `CONSOLE_SHOTS=docs/console` keeps
//! the screenshots docs/console.md shows.

use std::process::Command;

use devtools::stack::Stack;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn admins_do_their_work_in_the_console_in_a_real_browser() {
    let root = testkit::repo_root();
    let script = root.join("console/e2e/console.mjs");
    assert!(
        root.join("console/node_modules/playwright-core").exists(),
        "console/node_modules is missing: `make deps` installs it (npm ci in console/)"
    );
    let options = system_tests::local_stack_options();
    let mut stack = Stack::start(&options, &mut |line| eprintln!("· {line}"))
        .await
        .unwrap_or_else(|e| panic!("the local stack did not start: {e}"));
    let shots = std::env::var("CONSOLE_SHOTS")
        .map(|d| root.join(d))
        .unwrap_or_else(|_| options.state_dir.join("screenshots"));
    let run = tokio::task::spawn_blocking({
        let (console_url, admin) = (stack.console_url.clone(), stack.admin_login.clone());
        let console_dir = root.join("console");
        move || {
            Command::new("node")
                .arg(script)
                .current_dir(console_dir)
                .env("CONSOLE_URL", console_url)
                .env("ADMIN_LOGIN", admin)
                .env("SHOTS_DIR", &shots)
                .output()
                .expect("node runs")
        }
    })
    .await
    .unwrap();
    stack.shutdown();
    eprintln!("{}", String::from_utf8_lossy(&run.stdout));
    eprintln!("{}", String::from_utf8_lossy(&run.stderr));
    assert!(
        run.status.success(),
        "the console's browser test failed: see its output above"
    );
}
