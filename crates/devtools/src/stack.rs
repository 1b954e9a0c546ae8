//! The whole system on one machine, without Docker: DynamoDB Local (the
//! table created from `template.yaml`) behind the IAM and conflict proxy
//! (each function's requests checked against its policy in the template,
//! transactions cancelled as DynamoDB cancels them), an admin bootstrapped
//! into it, the three functions (and the example's `tickets`) under `cargo
//! lambda watch`, the stream poller invoking `recompute` (reading the
//! stream as recompute's IAM role, as the event source mapping does), the
//! local gateway in front of `authorizer` and `provisioning`, and two more
//! for the example tickets API behind the same authorizer, as a REST API
//! and as an HTTP API (its rules loaded beside provisioning's); tokens come from a real OpenID
//! provider (npm `oidc-provider`), the one issuer the authorizer trusts,
//! where the admin signs in with their email address as login.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use aws_sdk_dynamodb::config::{Credentials, Region};
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

use authz_core::Store;
use testkit::dynamodb_local::{self, Storage};
use testkit::proxy::Proxy;
use testkit::{process, template};

use crate::gateway::{Control, Gateway, GatewayConfig};
use crate::lambda::{Functions, Invoked};
use crate::oidc;
use crate::poller::{self, PollerStats};
use crate::stream::StreamReader;

/// The local gateway's API id (`!Ref AuthzApi`).
const LOCAL_API_ID: &str = "local";
/// The example API behind the same authorizer: its template, its id, and
/// its route rules (beside provisioning's).
const TICKETS_TEMPLATE: &str = "examples/tickets/template.yaml";
const TICKETS_API_ID: &str = "tickets";
const TICKETS_HTTP_API_ID: &str = "ticketshttp";
const TICKETS_RULES: &str = "tickets.json";
/// The function the table's stream events invoke (its role reads the stream).
const STREAM_FUNCTION: &str = "recompute";
/// How long the first build of a function may take.
const BUILD_TIMEOUT: Duration = Duration::from_secs(20 * 60);

/// Where the table lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Database {
    /// Start DynamoDB Local on this port.
    Start { port: u16, storage: Storage },
    /// Use a server that is already running.
    Existing { endpoint: String },
}

/// Everything the stack needs to start.
#[derive(Debug, Clone)]
pub struct StackOptions {
    /// The repository (template, routes, workspace).
    pub root: PathBuf,
    /// The template the stack follows: table, API, and the policies the
    /// proxy enforces (`root/template.yaml`).
    pub template: PathBuf,
    /// Logs, the function environment, the data.
    pub state_dir: PathBuf,
    pub database: Database,
    pub table: String,
    /// 0 picks a free port.
    pub gateway_port: u16,
    pub lambda_port: u16,
    /// The OpenID provider's port; 0 picks a free one.
    pub oidc_port: u16,
    /// The port of the example tickets API (`examples/tickets`, another
    /// API behind the same authorizer); 0 picks a free one.
    pub tickets_port: u16,
    /// The port of the same example as an HTTP API (payload 2.0, simple
    /// responses); 0 picks a free one.
    pub tickets_http_port: u16,
    /// The admin's email address, also their login (and subject) at the
    /// OpenID provider.
    pub admin_email: String,
    /// The gateway's result-cache TTL (`None`: the template's default).
    pub result_ttl: Option<Duration>,
    /// `CACHE_TTL_SECONDS` of the authorizer function.
    pub decision_cache_seconds: u64,
    /// `REVOCATION_CHECK_SECONDS` of the authorizer (and recompute's flush).
    pub revocation_check_seconds: u64,
    /// The `cargo-lambda` executable.
    pub cargo_lambda: PathBuf,
    /// Rebuild and reload functions when the code changes.
    pub reload: bool,
    /// The authorizer's trusted issuers (`TRUSTED_ISSUERS`, a JSON list as
    /// a deployment takes it), `{local}` standing for the local provider's
    /// URL and `{local2}` for a second one the stack then starts; `None`:
    /// the local provider alone, open to sign-up (`oidc::trusted_issuer`).
    pub trusted_issuers: Option<String>,
}

impl StackOptions {
    /// Defaults for the repository at `root`, state in `root/.local`.
    pub fn new(root: &Path) -> Self {
        Self {
            root: root.to_path_buf(),
            template: root.join("template.yaml"),
            state_dir: root.join(".local"),
            database: Database::Start {
                port: 8000,
                storage: Storage::OnDisk(root.join(".local/dynamodb")),
            },
            table: "authz-local".into(),
            gateway_port: 3000,
            lambda_port: 9000,
            oidc_port: 3001,
            tickets_port: 3002,
            tickets_http_port: 3003,
            admin_email: "admin@example.com".into(),
            result_ttl: Some(Duration::from_secs(5)),
            decision_cache_seconds: 5,
            revocation_check_seconds: 1,
            cargo_lambda: root.join(".venv/bin/cargo-lambda"),
            reload: true,
            trusted_issuers: None,
        }
    }

    fn log(&self, name: &str) -> PathBuf {
        self.state_dir.join("logs").join(format!("{name}.log"))
    }
}

/// A process group the stack started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    pub name: &'static str,
    pub pgid: u32,
}

/// The running stack.
pub struct Stack {
    /// `http://127.0.0.1:PORT/STAGE`
    pub api_url: String,
    /// The example tickets API, behind the same authorizer:
    /// `http://127.0.0.1:PORT/STAGE`.
    pub tickets_url: String,
    /// The same example as an HTTP API: `http://127.0.0.1:PORT`.
    pub tickets_http_url: String,
    /// The admin console: `http://127.0.0.1:PORT/STAGE/console/`.
    pub console_url: String,
    /// The OpenID provider's issuer URL (`http://127.0.0.1:PORT`).
    pub issuer: String,
    /// Every local provider's issuer URL, the first one's first.
    pub issuers: Vec<String>,
    pub admin_user_id: String,
    /// What the admin signs in as at the provider.
    pub admin_login: String,
    pub store: Store,
    /// DynamoDB Local itself (the operator's way in).
    pub dynamodb_endpoint: String,
    /// The IAM and conflict proxy the functions reach DynamoDB through.
    pub proxy: Proxy,
    pub functions: Functions,
    pub gateway: Arc<Gateway>,
    /// The example tickets API's gateway.
    pub tickets_gateway: Arc<Gateway>,
    /// The example's HTTP API's gateway.
    pub tickets_http_gateway: Arc<Gateway>,
    pub poller: Arc<PollerStats>,
    pub table: String,
    groups: Vec<Group>,
    tasks: Vec<JoinHandle<()>>,
}

type Progress<'a> = &'a mut dyn FnMut(&str);

impl StackOptions {
    /// Each fixed port the stack listens on is free, or an error naming
    /// the setting that moves it (a port of 0 is chosen when needed).
    fn ports_are_free(&self) -> Result<(), String> {
        let database = match &self.database {
            Database::Start { port, .. } => *port,
            Database::Existing { .. } => 0,
        };
        for (port, setting) in [
            (database, "DYNAMODB_PORT"),
            (self.lambda_port, "LAMBDA_PORT"),
            (self.gateway_port, "GATEWAY_PORT"),
            (self.oidc_port, "OIDC_PORT"),
            (self.tickets_port, "TICKETS_PORT"),
            (self.tickets_http_port, "TICKETS_HTTP_PORT"),
        ] {
            if port == 0 {
                continue;
            }
            if let Err(e) = std::net::TcpListener::bind(("127.0.0.1", port)) {
                return Err(format!(
                    "port {port} on 127.0.0.1 is taken ({e}): stop what holds it (`make down` if it is a stack `make dev` started) or set {setting} to a free port"
                ));
            }
        }
        Ok(())
    }
}

/// SDK configuration for a local DynamoDB endpoint (dummy credentials).
pub async fn sdk_config(endpoint: &str) -> aws_config::SdkConfig {
    sdk_config_loader(endpoint).load().await
}

pub(crate) fn sdk_config_loader(endpoint: &str) -> aws_config::ConfigLoader {
    aws_config::defaults(aws_config::BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new(
            "local",
            "local",
            None,
            None,
            "authz-local",
        ))
        .endpoint_url(endpoint)
}

impl Stack {
    /// Starts everything; `progress` hears what is happening. On failure,
    /// whatever was started is stopped again.
    pub async fn start(options: &StackOptions, progress: Progress<'_>) -> Result<Self, String> {
        let mut groups = Vec::new();
        match Self::start_inner(options, progress, &mut groups).await {
            Ok(stack) => Ok(stack),
            Err(e) => {
                for g in groups.iter().rev() {
                    process::stop_group(g.pgid, Duration::from_secs(5));
                }
                Err(e)
            }
        }
    }

    async fn start_inner(
        options: &StackOptions,
        progress: Progress<'_>,
        groups: &mut Vec<Group>,
    ) -> Result<Self, String> {
        std::fs::create_dir_all(&options.state_dir)
            .map_err(|e| format!("{}: {e}", options.state_dir.display()))?;
        let doc = template::read_file(&options.template)?;
        options.ports_are_free()?;

        let endpoint = match &options.database {
            Database::Existing { endpoint } => endpoint.clone(),
            Database::Start { port, storage } => {
                progress(&format!("starting DynamoDB Local on 127.0.0.1:{port}"));
                let jar_dir = dynamodb_local::jar_dir(&options.root);
                let log = options.log("dynamodb-local");
                let server = dynamodb_local::start(&jar_dir, *port, storage, Some(&log))?;
                groups.push(Group {
                    name: "dynamodb-local",
                    pgid: server.pid,
                });
                server.endpoint
            }
        };
        let config = sdk_config(&endpoint).await;
        let client = aws_sdk_dynamodb::Client::new(&config);
        let created =
            template::ensure_table(&client, &options.table, &template::table_definition(&doc))
                .await?;
        progress(&format!(
            "table {} {} (from template.yaml)",
            options.table,
            if created { "created" } else { "exists" }
        ));
        let store = Store::new(client, options.table.clone());

        let listener = TcpListener::bind(("127.0.0.1", options.gateway_port))
            .await
            .map_err(|e| format!("gateway port {}: {e}", options.gateway_port))?;
        let gateway_port = listener.local_addr().map_err(|e| e.to_string())?.port();
        let api = template::api_definition(&doc)?;
        // The console is served by the API at `<stage>/console/`: the
        // provider sends its sign-ins (and sign-outs) back there.
        let console_url = format!("http://127.0.0.1:{gateway_port}/{}/console/", api.stage);
        let oidc_port = match options.oidc_port {
            0 => testkit::dynamodb_local::free_port(),
            port => port,
        };
        let provider = oidc::start(
            &options.root,
            oidc_port,
            std::slice::from_ref(&console_url),
            &options.log("oidc-provider"),
        )
        .await?;
        groups.push(Group {
            name: "oidc-provider",
            pgid: provider.pgid,
        });
        let issuer = provider.issuer;
        progress(&format!(
            "OpenID provider (oidc-provider) on {issuer}: any login name signs in"
        ));
        // The issuers the authorizer trusts, as a deployment lists them:
        // `{local}` is this provider, `{local2}` a second one, and
        // `{tenant:NAME}` the id of the tenant NAME (created if missing).
        let mut issuers = vec![issuer.clone()];
        let trusted = match &options.trusted_issuers {
            None => oidc::trusted_issuer(&issuer).to_string(),
            Some(list) => {
                let mut list = tenants_named(&store, &list.replace("{local}", &issuer)).await?;
                if list.contains("{local2}") {
                    let second = oidc::start(
                        &options.root,
                        testkit::dynamodb_local::free_port(),
                        &[],
                        &options.log("oidc-provider-2"),
                    )
                    .await?;
                    groups.push(Group {
                        name: "oidc-provider",
                        pgid: second.pgid,
                    });
                    progress(&format!(
                        "a second OpenID provider on {} ({{local2}})",
                        second.issuer
                    ));
                    list = list.replace("{local2}", &second.issuer);
                    issuers.push(second.issuer);
                }
                authorizer::issuers::parse(&list).map_err(|e| format!("TRUSTED_ISSUERS: {e}"))?;
                list
            }
        };

        let admin_identity = provisioning::bodies::LinkIdentity {
            issuer: issuer.clone(),
            subject: options.admin_email.clone(),
        }
        .validate()
        .map_err(|e| format!("the admin's identity: {e}"))?;
        let admin = async {
            let (_, admin) =
                provisioning::bootstrap::ensure_admin(&store, &options.admin_email).await?;
            provisioning::bootstrap::ensure_identity(&store, &admin, &admin_identity).await
        }
        .await
        .map_err(|e| format!("bootstrap {}: {e}", options.admin_email))?;
        progress(&format!(
            "admin {} is user {} (platform-admin), signing in at {issuer} as {}",
            admin.email, admin.user_id, options.admin_email
        ));

        let (proxy, proxy_listener) = Proxy::bind(testkit::proxy_config(&doc, &endpoint)?)
            .await
            .map_err(|e| format!("start the IAM and conflict proxy: {e}"))?;
        proxy.register_table(&options.table);
        let serving = proxy.clone();
        let mut tasks = vec![tokio::spawn(
            async move { serving.serve(proxy_listener).await },
        )];
        progress(&format!(
            "functions reach DynamoDB through {} (IAM as {} grants it, transaction conflicts)",
            proxy.endpoint,
            options.template.display()
        ));

        let api_ttl = options
            .result_ttl
            .map_or(api.authorizer.ttl_seconds, |t| t.as_secs());
        let keyed_on_ip = api
            .authorizer
            .identity
            .contains(&template::IdentitySource::Context(
                "identity.sourceIp".into(),
            ));
        let tickets_listener = tokio::net::TcpListener::bind(("127.0.0.1", options.tickets_port))
            .await
            .map_err(|e| format!("tickets port {}: {e}", options.tickets_port))?;
        let tickets_http_listener =
            tokio::net::TcpListener::bind(("127.0.0.1", options.tickets_http_port))
                .await
                .map_err(|e| format!("tickets HTTP API port {}: {e}", options.tickets_http_port))?;
        let tickets_doc = template::read_file(&options.root.join(TICKETS_TEMPLATE))?;
        let tickets_api = template::api_definition(&tickets_doc)?;
        let tickets_http_api = template::http_api_definition(&tickets_doc)?;
        let env_file = options.state_dir.join("functions.env");
        // The provisioning API's rules, then the tickets API's beside them.
        let routes_file = format!(
            "{},{TICKETS_RULES}",
            options.root.join("route_rules/provisioning.json").display()
        );
        let env = [
            ("TABLE_NAME", options.table.clone()),
            ("AWS_REGION", "us-east-1".into()),
            ("AWS_ACCESS_KEY_ID", "local".into()),
            ("AWS_SECRET_ACCESS_KEY", "local".into()),
            ("AWS_EC2_METADATA_DISABLED", "true".into()),
            ("AWS_ENDPOINT_URL_DYNAMODB", proxy.endpoint.clone()),
            // The issuers trusted (by default the provider alone, its
            // tokens naming users by identity); in single quotes, as JSON
            // in an env file.
            (
                "TRUSTED_ISSUERS",
                format!("'{}'", trusted.replace('\n', " ")),
            ),
            ("ROUTES_FILE", routes_file),
            // The console signs in at the provider as its public client.
            ("CONSOLE_ISSUER", issuer.clone()),
            ("CONSOLE_CLIENT_ID", oidc::CLIENT.into()),
            (
                "CEDAR_SCHEMA_FILE",
                options
                    .root
                    .join("route_rules/schema.cedarschema")
                    .display()
                    .to_string(),
            ),
            // Recompute flushes the local gateway's result cache after
            // revocations, through its management API.
            (
                "AWS_ENDPOINT_URL_API_GATEWAY",
                format!("http://127.0.0.1:{gateway_port}"),
            ),
            (
                "AWS_ENDPOINT_URL_APIGATEWAYV2",
                format!("http://127.0.0.1:{gateway_port}"),
            ),
            ("REST_API_ID", LOCAL_API_ID.into()),
            ("STAGE_NAME", api.stage.clone()),
            // The example's two APIs are protected by the same authorizer:
            // their caches are flushed too (template parameter
            // ProtectedApiStages, as the example's stack outputs it).
            (
                "PROTECTED_STAGES",
                format!(
                    "restapis/{TICKETS_API_ID}/stages/{},apis/{TICKETS_HTTP_API_ID}/stages/{}",
                    tickets_api.stage, tickets_http_api.stage
                ),
            ),
            (
                "REVOCATION_CHECK_SECONDS",
                options.revocation_check_seconds.to_string(),
            ),
            // What the template gives provisioning: API Gateway's result
            // TTL (the local gateway's) and whether its cache keys on the IP.
            ("AUTHORIZER_RESULT_TTL", api_ttl.to_string()),
            ("CACHE_KEY_ON_SOURCE_IP", keyed_on_ip.to_string()),
            (
                "CACHE_TTL_SECONDS",
                options.decision_cache_seconds.to_string(),
            ),
            ("RUST_LOG", "info".into()),
        ];
        let text: String = env.iter().map(|(k, v)| format!("{k}={v}\n")).collect();
        std::fs::write(&env_file, text).map_err(|e| format!("{}: {e}", env_file.display()))?;

        if !options.cargo_lambda.exists() {
            return Err(format!(
                "{} is missing: `make deps` installs cargo-lambda into .venv",
                options.cargo_lambda.display()
            ));
        }
        let lambda_endpoint = format!("http://127.0.0.1:{}", options.lambda_port);
        progress(&format!(
            "starting the functions with `cargo lambda watch` on {lambda_endpoint}"
        ));
        let mut command = std::process::Command::new(&options.cargo_lambda);
        command
            .args([
                "lambda",
                "watch",
                "--invoke-address",
                "127.0.0.1",
                "--invoke-port",
            ])
            .arg(options.lambda_port.to_string())
            .arg("--env-file")
            .arg(&env_file)
            .current_dir(&options.root);
        if !options.reload {
            command.arg("--ignore-changes");
        }
        let pgid = process::spawn(command, Some(&options.log("functions")))
            .map_err(|e| format!("start cargo lambda watch: {e}"))?;
        groups.push(Group {
            name: "cargo-lambda",
            pgid,
        });
        let functions = Functions::new(&lambda_endpoint);
        wait_for_port(options.lambda_port, pgid, &options.log("functions")).await?;

        let mut names: Vec<String> = api
            .routes
            .iter()
            .chain(&tickets_api.routes)
            .chain(&tickets_http_api.routes)
            .map(|r| r.function.clone())
            .collect();
        names.push(api.authorizer.function.clone());
        names.push(STREAM_FUNCTION.into());
        names.sort();
        names.dedup();
        for name in &names {
            progress(&format!(
                "building and starting {name} (the first build takes minutes; log: {})",
                options.log("functions").display()
            ));
            warm_up(&functions, name, &options.log("functions"), progress).await?;
        }

        // The management API: recompute flushes both stages' result caches
        // under the policies AWS would apply (the template's, and the one
        // the example's stack attaches to recompute's role for its stage).
        let control = Control::new(Some(
            testkit::iam::Policies::from_template(&doc)?
                .attached(&tickets_doc, &[("RecomputeRoleName", STREAM_FUNCTION)])?
                .with_refs([
                    ("AuthzApi", LOCAL_API_ID),
                    ("StageName", api.stage.as_str()),
                    ("TicketsApi", TICKETS_API_ID),
                    ("TicketsHttpApi", TICKETS_HTTP_API_ID),
                ]),
        ));
        let mut gateway_config = GatewayConfig::new(api.clone());
        gateway_config.result_ttl = options.result_ttl;
        gateway_config.api_id = LOCAL_API_ID.into();
        gateway_config.control = Some(control.clone());
        gateway_config.documents.insert(
            "/openapi.json".into(),
            serde_json::to_string(&provisioning::openapi::document())
                .map_err(|e| format!("the OpenAPI document: {e}"))?,
        );
        let gateway = Arc::new(Gateway::new(gateway_config, functions.clone())?);
        control.register(
            &format!("restapis/{LOCAL_API_ID}/stages/{}", api.stage),
            &gateway,
        );
        tasks.push(tokio::spawn(crate::gateway::serve(
            listener,
            gateway.clone(),
        )));

        let tickets_port = tickets_listener
            .local_addr()
            .map_err(|e| e.to_string())?
            .port();
        let tickets_url = format!("http://127.0.0.1:{tickets_port}/{}", tickets_api.stage);
        let tickets_stage = tickets_api.stage.clone();
        let mut tickets_config = GatewayConfig::new(tickets_api);
        tickets_config.result_ttl = options.result_ttl;
        tickets_config.api_id = TICKETS_API_ID.into();
        let tickets = Arc::new(Gateway::new(tickets_config, functions.clone())?);
        control.register(
            &format!("restapis/{TICKETS_API_ID}/stages/{tickets_stage}"),
            &tickets,
        );
        tasks.push(tokio::spawn(crate::gateway::serve(
            tickets_listener,
            tickets.clone(),
        )));
        let tickets_http_port = tickets_http_listener
            .local_addr()
            .map_err(|e| e.to_string())?
            .port();
        // An HTTP API's `$default` stage is in no path.
        let tickets_http_url = format!("http://127.0.0.1:{tickets_http_port}");
        let tickets_http_stage = tickets_http_api.stage.clone();
        let mut tickets_http_config = GatewayConfig::new(tickets_http_api);
        tickets_http_config.result_ttl = options.result_ttl;
        tickets_http_config.api_id = TICKETS_HTTP_API_ID.into();
        let tickets_http = Arc::new(Gateway::new(tickets_http_config, functions.clone())?);
        control.register(
            &format!("apis/{TICKETS_HTTP_API_ID}/stages/{tickets_http_stage}"),
            &tickets_http,
        );
        tasks.push(tokio::spawn(crate::gateway::serve(
            tickets_http_listener,
            tickets_http.clone(),
        )));

        let stream_arn = crate::stream::latest_stream_arn(&config, &options.table)
            .await
            .map_err(|e| format!("the table's stream: {e}"))?;
        let stream_reader_config = sdk_config_loader(&proxy.endpoint)
            .app_name(aws_config::AppName::new(STREAM_FUNCTION).expect("a valid app name"))
            .load()
            .await;
        // The template's two mappings: fan-outs and deletions, and the
        // revocations whose flushes no fan-out holds up.
        let poller_stats = Arc::new(PollerStats::default());
        for (stats, only) in [
            (
                poller_stats.clone(),
                poller::all_but_revocations as poller::Filter,
            ),
            (Arc::new(PollerStats::default()), poller::revocations),
        ] {
            let reader = StreamReader::for_stream(&stream_reader_config, stream_arn.clone())
                .await
                .map_err(|e| format!("open the table's stream: {e}"))?;
            tasks.push(tokio::spawn(poller::run(
                reader,
                functions.clone(),
                STREAM_FUNCTION.into(),
                stats,
                only,
            )));
        }
        let api_url = format!("http://127.0.0.1:{gateway_port}/{}", api.stage);
        progress(&format!(
            "gateway on {api_url} (authorizer result cache {} s), stream poller running",
            gateway.result_ttl().as_secs()
        ));
        progress(&format!(
            "the example tickets API on {tickets_url} (REST API) and {tickets_http_url} (HTTP API), behind the same authorizer"
        ));
        progress(&format!(
            "the admin console on {console_url} (sign in as {})",
            options.admin_email
        ));
        Ok(Self {
            api_url,
            tickets_url,
            tickets_http_url,
            console_url,
            issuer,
            issuers,
            admin_user_id: admin.user_id.to_string(),
            admin_login: options.admin_email.clone(),
            store,
            dynamodb_endpoint: endpoint,
            proxy,
            functions,
            gateway,
            tickets_gateway: tickets,
            tickets_http_gateway: tickets_http,
            poller: poller_stats,
            table: options.table.clone(),
            groups: std::mem::take(groups),
            tasks,
        })
    }

    /// An access token for `login`, signed in at the provider (the
    /// authorization code flow with PKCE, as a person in a browser).
    pub async fn sign_in(&self, login: &str) -> Result<String, String> {
        oidc::sign_in(&self.issuer, login).await
    }

    /// The process groups this stack started.
    pub fn groups(&self) -> &[Group] {
        &self.groups
    }

    /// Stops the tasks and the processes, functions first.
    pub fn shutdown(&mut self) {
        for task in self.tasks.drain(..) {
            task.abort();
        }
        for group in self.groups.drain(..).rev() {
            process::stop_group(group.pgid, Duration::from_secs(5));
        }
    }
}

impl Drop for Stack {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// `list` with each `{tenant:NAME}` replaced by the id of the tenant
/// named NAME, created (by the operator) when there is none, so that a
/// trusted-issuer list can bind an issuer to a tenant before its first
/// start.
async fn tenants_named(store: &Store, list: &str) -> Result<String, String> {
    const OPEN: &str = "{tenant:";
    let mut out = String::with_capacity(list.len());
    let mut rest = list;
    while let Some(at) = rest.find(OPEN) {
        out.push_str(&rest[..at]);
        let after = &rest[at + OPEN.len()..];
        let end = after
            .find('}')
            .ok_or_else(|| format!("TRUSTED_ISSUERS: {OPEN}… has no closing brace"))?;
        let name = authz_core::model::values::TenantName::parse(&after[..end])
            .map_err(|e| format!("TRUSTED_ISSUERS: {OPEN}{}}}: {e}", &after[..end]))?;
        let tenant = match store
            .tenant_by_name(&name)
            .await
            .map_err(|e| e.to_string())?
        {
            Some(tenant) => tenant,
            None => store
                .create_tenant(
                    &authz_core::model::input::NewTenant { name },
                    Some("authz-local"),
                )
                .await
                .map_err(|e| format!("TRUSTED_ISSUERS: create tenant {}: {e}", &after[..end]))?,
        };
        out.push_str(&tenant.tenant_id.to_string());
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

async fn wait_for_port(port: u16, pgid: u32, log: &Path) -> Result<(), String> {
    for _ in 0..600 {
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            return Ok(());
        }
        if !process::alive(pgid) {
            return Err(format!(
                "cargo lambda watch exited (see {}): is port {port} free?",
                log.display()
            ));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Err(format!("cargo lambda watch did not listen on {port}"))
}

/// Invokes a function once with a harmless event so its first build
/// happens now, not under a request's timeout. Each answer is checked: a
/// build failure or a function that cannot start fails the stack, a build
/// failure at once (cargo lambda leaves the invocation waiting; its log says
/// what happened).
async fn warm_up(
    functions: &Functions,
    name: &str,
    log: &Path,
    progress: Progress<'_>,
) -> Result<(), String> {
    let seen = std::fs::metadata(log).map(|m| m.len()).unwrap_or(0);
    let started = std::time::Instant::now();
    let mut told = Duration::ZERO;
    let invoke = warm_up_invoke(functions, name);
    tokio::pin!(invoke);
    loop {
        tokio::select! {
            result = &mut invoke => return result,
            _ = tokio::time::sleep(Duration::from_millis(500)) => {
                if let Some(line) = build_failure(log, seen) {
                    return Err(format!("building {name} failed: {line} (see {})", log.display()));
                }
                // A build of minutes says how far it is, every 15 s.
                if started.elapsed() >= told + BUILD_PROGRESS_EVERY {
                    told = started.elapsed();
                    if let Some((compiled, last)) = build_progress(log, seen) {
                        progress(&format!(
                            "  {name}: {}s, {compiled} crates compiled, now {last}",
                            told.as_secs()
                        ));
                    }
                }
            }
        }
    }
}

/// How often a function's first build reports its progress.
const BUILD_PROGRESS_EVERY: Duration = Duration::from_secs(15);

/// How far a build is, from what cargo wrote to `log` after `from`: the
/// crates compiled so far and the last one it started.
fn build_progress(log: &Path, from: u64) -> Option<(usize, String)> {
    let text = std::fs::read(log).ok()?;
    let new = String::from_utf8_lossy(text.get(from as usize..)?).into_owned();
    let compiling: Vec<&str> = new
        .lines()
        .filter_map(|l| l.trim().strip_prefix("Compiling "))
        .collect();
    let last = compiling.last()?;
    Some((compiling.len(), last.to_string()))
}

/// What cargo lambda or cargo wrote after `from` about a failed build: the
/// line that says so, with the compiler's first error before it and the
/// `Caused by:` detail after it (a killed compiler, a full disk), so that a
/// failure far away (CI) says why without its log.
fn build_failure(log: &Path, from: u64) -> Option<String> {
    let text = std::fs::read(log).ok()?;
    let new = String::from_utf8_lossy(text.get(from as usize..)?).into_owned();
    let lines: Vec<&str> = new.lines().map(str::trim).collect();
    let failed = lines.iter().position(|l| {
        l.contains("error: could not compile") || l.contains("command exited code=")
    })?;
    let cause = lines[..failed].iter().find(|l| l.starts_with("error"));
    let mut after = lines[failed + 1..].iter().filter(|l| !l.is_empty());
    let detail = after
        .next()
        .filter(|l| l.starts_with("Caused by:"))
        .and(after.next());
    let said: Vec<&str> = [cause, Some(&lines[failed]), detail]
        .into_iter()
        .flatten()
        .copied()
        .collect();
    Some(said.join(" / "))
}

async fn warm_up_invoke(functions: &Functions, name: &str) -> Result<(), String> {
    let (event, expect_error): (Value, bool) = match name {
        // No token: the authorizer answers `Unauthorized`.
        "authorizer" => (
            serde_json::from_str(include_str!("../../../events/authorizer-rest-request.json"))
                .expect("the sample event is JSON"),
            true,
        ),
        // An empty batch.
        "recompute" => (json!({"Records": []}), false),
        // A route that does not exist: a 404 from the function itself.
        _ => {
            let mut event: Value = serde_json::from_str(include_str!(
                "../../../events/provisioning-list-tenants.json"
            ))
            .expect("the sample event is JSON");
            event["path"] = json!("/warm-up");
            event["resource"] = json!("/warm-up");
            event["requestContext"]["path"] = json!("/prod/warm-up");
            (event, false)
        }
    };
    match functions.invoke(name, &event, BUILD_TIMEOUT).await {
        Ok(Invoked::FunctionError { message, .. }) if expect_error && message == "Unauthorized" => {
            Ok(())
        }
        Ok(Invoked::Response(_)) if !expect_error => Ok(()),
        Ok(other) => Err(format!("{name} answered its warm-up with {other:?}")),
        Err(e) => Err(format!("{e} (see the functions log)")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Only what the log gained since the warm-up began counts.
    #[test]
    fn build_progress_counts_the_crates_compiled_since_the_mark() {
        let log = std::env::temp_dir().join(format!("authz-stack-{}.log", ulid::Ulid::new()));
        std::fs::write(&log, "   Compiling old v1.0.0\n").unwrap();
        let from = std::fs::metadata(&log).unwrap().len();
        assert_eq!(build_progress(&log, from), None, "nothing compiled since");
        let mut text = std::fs::read_to_string(&log).unwrap();
        text.push_str(
            "   Compiling serde v1.0.228\n   Compiling authz-core v0.1.0 (/w/crates/core)\n",
        );
        std::fs::write(&log, text).unwrap();
        assert_eq!(
            build_progress(&log, from),
            Some((2, "authz-core v0.1.0 (/w/crates/core)".to_string()))
        );
        std::fs::remove_file(&log).unwrap();
    }

    #[test]
    fn build_failures_are_read_from_what_the_log_gained() {
        let log = std::env::temp_dir().join(format!("authz-stack-{}.log", ulid::Ulid::new()));
        std::fs::write(&log, "ERROR command exited code=101\n").unwrap();
        let from = std::fs::metadata(&log).unwrap().len();
        assert_eq!(
            build_failure(&log, from),
            None,
            "an earlier failure is history"
        );
        let mut text = std::fs::read_to_string(&log).unwrap();
        text.push_str("   Compiling tokio v1\nerror: could not compile `tokio` (lib) due to 1 previous error\n");
        std::fs::write(&log, text).unwrap();
        assert_eq!(
            build_failure(&log, from).as_deref(),
            Some("error: could not compile `tokio` (lib) due to 1 previous error")
        );
        for (written, reported) in [
            (
                concat!(
                    "error: failed to write rlib: No space left on device (os error 28)\n",
                    "error: could not compile `axum` (lib) due to 1 previous error\n",
                ),
                concat!(
                    "error: failed to write rlib: No space left on device (os error 28) / ",
                    "error: could not compile `axum` (lib) due to 1 previous error"
                ),
            ),
            (
                concat!(
                    "error: could not compile `hyper` (lib)\n\nCaused by:\n",
                    "  process didn't exit successfully: `rustc` (signal: 9, SIGKILL: kill)\n",
                ),
                concat!(
                    "error: could not compile `hyper` (lib) / ",
                    "process didn't exit successfully: `rustc` (signal: 9, SIGKILL: kill)"
                ),
            ),
        ] {
            let from = std::fs::metadata(&log).unwrap().len();
            let mut text = std::fs::read_to_string(&log).unwrap();
            text.push_str(written);
            std::fs::write(&log, text).unwrap();
            assert_eq!(
                build_failure(&log, from).as_deref(),
                Some(reported),
                "the compiler's own error and cargo's cause come with the failure"
            );
        }
        assert_eq!(build_failure(&log.with_extension("missing"), 0), None);
        std::fs::remove_file(&log).unwrap();
    }

    #[test]
    fn a_taken_port_names_the_setting_that_moves_it() {
        let held = std::net::TcpListener::bind(("127.0.0.1", 0)).unwrap();
        let port = held.local_addr().unwrap().port();
        let mut options = StackOptions::new(std::path::Path::new("."));
        options.database = Database::Existing {
            endpoint: "http://127.0.0.1:1".into(),
        };
        (options.lambda_port, options.gateway_port, options.oidc_port) = (0, port, 0);
        let e = options.ports_are_free().unwrap_err();
        assert!(
            e.contains(&port.to_string()) && e.contains("GATEWAY_PORT"),
            "{e}"
        );
        (options.gateway_port, options.oidc_port) = (0, port);
        assert!(options.ports_are_free().unwrap_err().contains("OIDC_PORT"));
        drop(held);
        assert_eq!(options.ports_are_free(), Ok(()));
    }
}
