//! What `template.yaml` declares, read from the file itself so there is one
//! source of truth: the table (keys, indexes, stream) and `CreateTable`
//! built from it, and the REST and HTTP APIs (stage, routes and the
//! functions behind them, the default authorizer with its identity sources
//! and result TTL) that the local gateway serves.

use std::path::Path;
use std::time::Duration;

use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, GlobalSecondaryIndex, KeySchemaElement, KeyType, Projection,
    ProjectionType, ScalarAttributeType, StreamSpecification, StreamViewType,
};
use aws_sdk_dynamodb::Client;
use serde_yaml::Value;

/// A global secondary index as the template declares it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gsi {
    pub name: String,
    pub hash_key: String,
    pub range_key: Option<String>,
    pub projection: String,
}

/// The `AWS::DynamoDB::Table` resource of `template.yaml`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableDefinition {
    pub logical_id: String,
    /// `(name, type)` pairs.
    pub attributes: Vec<(String, String)>,
    pub hash_key: String,
    pub range_key: Option<String>,
    pub gsis: Vec<Gsi>,
    pub billing_mode: String,
    pub stream_view_type: Option<String>,
    pub point_in_time_recovery: bool,
    pub sse_enabled: bool,
}

fn s<'a>(v: &'a Value, path: &[&str]) -> Option<&'a str> {
    let mut cur = v;
    for p in path {
        cur = cur.get(*p)?;
    }
    cur.as_str()
}

fn key_schema(v: &Value) -> (String, Option<String>) {
    let elems = v.as_sequence().expect("KeySchema is a list");
    let find = |kind: &str| {
        elems
            .iter()
            .find(|e| s(e, &["KeyType"]) == Some(kind))
            .and_then(|e| s(e, &["AttributeName"]))
            .map(str::to_string)
    };
    (find("HASH").expect("a HASH key"), find("RANGE"))
}

/// Reads `template.yaml` under `root`.
pub fn read(root: &Path) -> Result<Value, String> {
    read_file(&root.join("template.yaml"))
}

/// Reads a template file.
pub fn read_file(path: &Path) -> Result<Value, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    serde_yaml::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// Parses the table resource out of a template.
pub fn table_definition(doc: &Value) -> TableDefinition {
    let resources = doc["Resources"]
        .as_mapping()
        .expect("template has Resources");
    let tables: Vec<_> = resources
        .iter()
        .filter(|(_, r)| s(r, &["Type"]) == Some("AWS::DynamoDB::Table"))
        .collect();
    assert_eq!(tables.len(), 1, "template.yaml defines exactly one table");
    let (logical_id, table) = tables[0];
    let props = &table["Properties"];
    let attributes = props["AttributeDefinitions"]
        .as_sequence()
        .expect("AttributeDefinitions")
        .iter()
        .map(|a| {
            (
                s(a, &["AttributeName"]).expect("AttributeName").to_string(),
                s(a, &["AttributeType"]).expect("AttributeType").to_string(),
            )
        })
        .collect();
    let (hash_key, range_key) = key_schema(&props["KeySchema"]);
    let gsis = props
        .get("GlobalSecondaryIndexes")
        .and_then(Value::as_sequence)
        .map(|list| {
            list.iter()
                .map(|g| {
                    let (hash_key, range_key) = key_schema(&g["KeySchema"]);
                    Gsi {
                        name: s(g, &["IndexName"]).expect("IndexName").to_string(),
                        hash_key,
                        range_key,
                        projection: s(g, &["Projection", "ProjectionType"])
                            .expect("ProjectionType")
                            .to_string(),
                    }
                })
                .collect()
        })
        .unwrap_or_default();
    TableDefinition {
        logical_id: logical_id.as_str().expect("logical id").to_string(),
        attributes,
        hash_key,
        range_key,
        gsis,
        billing_mode: s(props, &["BillingMode"])
            .unwrap_or("PROVISIONED")
            .to_string(),
        stream_view_type: s(props, &["StreamSpecification", "StreamViewType"]).map(str::to_string),
        point_in_time_recovery: props["PointInTimeRecoverySpecification"]
            ["PointInTimeRecoveryEnabled"]
            .as_bool()
            .unwrap_or(false),
        sse_enabled: props["SSESpecification"]["SSEEnabled"]
            .as_bool()
            .unwrap_or(false),
    }
}

fn key_elements(hash: &str, range: &Option<String>) -> Vec<KeySchemaElement> {
    let mut out = vec![KeySchemaElement::builder()
        .attribute_name(hash)
        .key_type(KeyType::Hash)
        .build()
        .expect("key element")];
    if let Some(range) = range {
        out.push(
            KeySchemaElement::builder()
                .attribute_name(range)
                .key_type(KeyType::Range)
                .build()
                .expect("key element"),
        );
    }
    out
}

/// Creates `name` with the template's definition. PITR and SSE are account
/// settings DynamoDB Local does not model; everything that shapes behaviour
/// (keys, indexes, projections, billing, stream) is applied. A server that
/// has only just opened its port is given a few seconds to warm up.
pub async fn create_table(
    client: &Client,
    name: &str,
    def: &TableDefinition,
) -> Result<(), String> {
    let mut request = client
        .create_table()
        .table_name(name)
        .set_key_schema(Some(key_elements(&def.hash_key, &def.range_key)))
        .billing_mode(BillingMode::from(def.billing_mode.as_str()));
    for (attr, kind) in &def.attributes {
        request = request.attribute_definitions(
            AttributeDefinition::builder()
                .attribute_name(attr)
                .attribute_type(ScalarAttributeType::from(kind.as_str()))
                .build()
                .map_err(|e| e.to_string())?,
        );
    }
    for gsi in &def.gsis {
        request = request.global_secondary_indexes(
            GlobalSecondaryIndex::builder()
                .index_name(&gsi.name)
                .set_key_schema(Some(key_elements(&gsi.hash_key, &gsi.range_key)))
                .projection(
                    Projection::builder()
                        .projection_type(ProjectionType::from(gsi.projection.as_str()))
                        .build(),
                )
                .build()
                .map_err(|e| e.to_string())?,
        );
    }
    if let Some(view) = &def.stream_view_type {
        request = request.stream_specification(
            StreamSpecification::builder()
                .stream_enabled(true)
                .stream_view_type(StreamViewType::from(view.as_str()))
                .build()
                .map_err(|e| e.to_string())?,
        );
    }
    let mut attempt = 0;
    loop {
        match request.clone().send().await {
            Ok(_) => return Ok(()),
            Err(e) if attempt < 40 && e.as_service_error().is_none() => {
                attempt += 1;
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
            Err(e) => {
                return Err(format!(
                    "create table {name}: {}",
                    aws_smithy_types::error::display::DisplayErrorContext(&e)
                ))
            }
        }
    }
}

/// Creates `name` unless it exists; `true` when it was created.
pub async fn ensure_table(
    client: &Client,
    name: &str,
    def: &TableDefinition,
) -> Result<bool, String> {
    match client.describe_table().table_name(name).send().await {
        Ok(_) => Ok(false),
        Err(e)
            if e.as_service_error()
                .is_some_and(|e| e.is_resource_not_found_exception()) =>
        {
            create_table(client, name, def).await.map(|()| true)
        }
        Err(e) => Err(format!(
            "describe table {name}: {}",
            aws_smithy_types::error::display::DisplayErrorContext(&e)
        )),
    }
}

/// A mapping expression API Gateway reads an identity source from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IdentitySource {
    /// `method.request.header.NAME`
    Header(String),
    /// `method.request.querystring.NAME`
    QueryString(String),
    /// `stageVariables.NAME`
    StageVariable(String),
    /// `context.NAME`
    Context(String),
}

/// An API's default Lambda REQUEST authorizer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthorizerDefinition {
    /// The binary (and local function name) of the authorizer function.
    pub function: String,
    pub identity: Vec<IdentitySource>,
    /// Result-cache TTL (`ReauthorizeEvery`, parameter defaults resolved).
    pub ttl_seconds: u64,
}

/// One method on one resource, proxied to a function.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiRoute {
    /// Upper case, or `ANY`.
    pub method: String,
    /// The resource template, e.g. `/tenants/{tenantId}`.
    pub resource: String,
    /// The binary (and local function name) of the integration.
    pub function: String,
    /// Whether the default authorizer protects it (`Auth: {Authorizer: NONE}` opts out).
    pub authorized: bool,
}

/// Which of API Gateway's two kinds of API, and how it calls its
/// authorizer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ApiKind {
    /// A REST API (`AWS::Serverless::Api`): payload 1.0 events, IAM policy
    /// answers, the stage in every path.
    #[default]
    Rest,
    /// An HTTP API (`AWS::Serverless::HttpApi`) with a payload 2.0 Lambda
    /// authorizer, on its `$default` stage (no stage in the path).
    Http {
        /// `EnableSimpleResponses`: the authorizer answers
        /// `{"isAuthorized": …, "context": …}`, not an IAM policy.
        simple_responses: bool,
    },
}

/// An API and the functions' events on it: a REST API
/// ([`api_definition`]) or an HTTP API ([`http_api_definition`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiDefinition {
    pub kind: ApiKind,
    pub logical_id: String,
    pub stage: String,
    pub authorizer: AuthorizerDefinition,
    pub routes: Vec<ApiRoute>,
    /// The API's gateway responses by response type (`UNAUTHORIZED`,
    /// `DEFAULT_4XX`, ...).
    pub gateway_responses: std::collections::BTreeMap<String, GatewayResponse>,
}

/// How the API reshapes one type of API Gateway's own answers.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GatewayResponse {
    /// `StatusCode`, when it replaces the type's own.
    pub status: Option<u16>,
    /// `ResponseParameters.Headers`, each a static value (the template's
    /// `'...'` quoting removed).
    pub headers: Vec<(String, String)>,
    /// `ResponseTemplates["application/json"]`.
    pub json_template: Option<String>,
}

/// `GatewayResponses` of an `AWS::Serverless::Api`.
fn gateway_responses(
    props: &Value,
) -> Result<std::collections::BTreeMap<String, GatewayResponse>, String> {
    let mut out = std::collections::BTreeMap::new();
    for (kind, r) in props["GatewayResponses"].as_mapping().into_iter().flatten() {
        let kind = kind.as_str().ok_or("GatewayResponses: a type")?.to_string();
        let at = |what: &str| format!("GatewayResponses.{kind}.{what}");
        let status = match r.get("StatusCode") {
            None => None,
            Some(v) => Some(
                v.as_str()
                    .map(str::to_string)
                    .or_else(|| v.as_u64().map(|n| n.to_string()))
                    .and_then(|t| t.parse().ok())
                    .ok_or_else(|| at("StatusCode"))?,
            ),
        };
        let mut headers = Vec::new();
        for (name, value) in r["ResponseParameters"]["Headers"]
            .as_mapping()
            .into_iter()
            .flatten()
        {
            let name = name.as_str().ok_or_else(|| at("ResponseParameters"))?;
            let value = value
                .as_str()
                .and_then(|v| v.strip_prefix('\'')?.strip_suffix('\''))
                .ok_or_else(|| {
                    at(&format!(
                        "ResponseParameters.Headers.{name} (a static '...' value)"
                    ))
                })?;
            headers.push((name.to_string(), value.to_string()));
        }
        let json_template = r["ResponseTemplates"]["application/json"]
            .as_str()
            .map(str::to_string);
        out.insert(
            kind.clone(),
            GatewayResponse {
                status,
                headers,
                json_template,
            },
        );
    }
    Ok(out)
}

/// A scalar, or a `!Ref` to a parameter, resolved to the parameter's default.
fn resolve(doc: &Value, v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Tagged(t) if t.tag == "Ref" => {
            let name = t.value.as_str()?;
            resolve(doc, &doc["Parameters"][name]["Default"])
        }
        _ => None,
    }
}

/// A value, or the branch an `!If [Condition, a, b]` takes with the
/// parameters at their defaults (conditions of the form
/// `!Equals [!Ref Parameter, "value"]`).
fn resolve_if<'a>(doc: &Value, v: &'a Value) -> &'a Value {
    let Value::Tagged(t) = v else { return v };
    if t.tag != "If" {
        return v;
    }
    let Some([condition, then, otherwise]) = t.value.as_sequence().map(Vec::as_slice) else {
        return v;
    };
    let holds = condition
        .as_str()
        .and_then(|name| match &doc["Conditions"][name] {
            Value::Tagged(c) if c.tag == "Equals" => {
                let pair = c.value.as_sequence()?;
                Some(resolve(doc, pair.first()?)? == resolve(doc, pair.get(1)?)?)
            }
            _ => None,
        })
        .unwrap_or(false);
    if holds {
        then
    } else {
        otherwise
    }
}

/// The binary a function resource is built from (`Metadata.BuildProperties.Binary`).
fn function_binary(doc: &Value, logical_id: &str) -> Result<String, String> {
    s(
        &doc["Resources"][logical_id],
        &["Metadata", "BuildProperties", "Binary"],
    )
    .map(str::to_string)
    .ok_or_else(|| format!("{logical_id}: no Metadata.BuildProperties.Binary"))
}

/// The function an imported authorizer (`Fn::ImportValue` of the authz
/// stack's `AuthorizerFunctionArn` export, as another API's template names
/// it) is served by locally.
pub const IMPORTED_AUTHORIZER: &str = "authorizer";

/// Parses the REST API: its stage, default authorizer and every `Api` event
/// of every function.
pub fn api_definition(doc: &Value) -> Result<ApiDefinition, String> {
    let (logical_id, api) = the_api(doc, "AWS::Serverless::Api")?;
    let props = &api["Properties"];
    let stage = resolve(doc, &props["StageName"]).ok_or("the API has no StageName")?;
    let (name, authorizer) = default_authorizer(props)?;
    if s(authorizer, &["FunctionPayloadType"]) != Some("REQUEST") {
        return Err(format!(
            "authorizer {name}: FunctionPayloadType must be REQUEST"
        ));
    }
    Ok(ApiDefinition {
        kind: ApiKind::Rest,
        logical_id,
        stage,
        authorizer: authorizer_definition(doc, name, authorizer)?,
        routes: routes(doc, "Api")?,
        gateway_responses: gateway_responses(props)?,
    })
}

/// Parses the HTTP API: its default Lambda authorizer (payload 2.0, the
/// only one served locally) and every `HttpApi` event of every function,
/// on its `$default` stage.
pub fn http_api_definition(doc: &Value) -> Result<ApiDefinition, String> {
    let (logical_id, api) = the_api(doc, "AWS::Serverless::HttpApi")?;
    let props = &api["Properties"];
    let (name, authorizer) = default_authorizer(props)?;
    if s(authorizer, &["AuthorizerPayloadFormatVersion"]) != Some("2.0") {
        return Err(format!(
            "authorizer {name}: AuthorizerPayloadFormatVersion must be \"2.0\" (the only one served locally)"
        ));
    }
    let simple_responses = matches!(&authorizer["EnableSimpleResponses"], Value::Bool(true));
    Ok(ApiDefinition {
        kind: ApiKind::Http { simple_responses },
        logical_id,
        stage: "$default".into(),
        authorizer: authorizer_definition(doc, name, authorizer)?,
        routes: routes(doc, "HttpApi")?,
        gateway_responses: Default::default(),
    })
}

/// The template's one resource of type `kind`, with its logical id.
fn the_api<'a>(doc: &'a Value, kind: &str) -> Result<(String, &'a Value), String> {
    let resources = doc["Resources"]
        .as_mapping()
        .ok_or("template has no Resources")?;
    let apis: Vec<_> = resources
        .iter()
        .filter(|(_, r)| s(r, &["Type"]) == Some(kind))
        .collect();
    let [(id, api)] = apis.as_slice() else {
        return Err(format!(
            "the template should define one {kind}, not {}",
            apis.len()
        ));
    };
    Ok((id.as_str().ok_or("API logical id")?.to_string(), api))
}

/// The API's `Auth.DefaultAuthorizer`: its name and definition.
fn default_authorizer(props: &Value) -> Result<(&str, &Value), String> {
    let auth = &props["Auth"];
    let default = s(auth, &["DefaultAuthorizer"]).ok_or("the API has no DefaultAuthorizer")?;
    Ok((default, &auth["Authorizers"][default]))
}

/// A Lambda authorizer's function, identity sources and result TTL.
fn authorizer_definition(
    doc: &Value,
    name: &str,
    authorizer: &Value,
) -> Result<AuthorizerDefinition, String> {
    let shape = || {
        format!("authorizer {name}: FunctionArn must be !GetAtt <Function>.Arn or the authz stack's export")
    };
    let function = match &authorizer["FunctionArn"] {
        Value::Tagged(t) if t.tag == "GetAtt" => {
            let logical_id = t
                .value
                .as_str()
                .and_then(|v| v.strip_suffix(".Arn"))
                .ok_or_else(shape)?;
            function_binary(doc, logical_id)?
        }
        // Another stack's API behind the authz stack's authorizer, through
        // its `AuthorizerFunctionArn` export: locally, the authorizer.
        Value::Tagged(t) if t.tag == "ImportValue" => IMPORTED_AUTHORIZER.to_string(),
        Value::Mapping(m) if m.contains_key("Fn::ImportValue") => IMPORTED_AUTHORIZER.to_string(),
        _ => return Err(shape()),
    };
    let identity_doc = &authorizer["Identity"];
    let mut identity = Vec::new();
    for (key, make) in [
        (
            "Headers",
            IdentitySource::Header as fn(String) -> IdentitySource,
        ),
        ("QueryStrings", IdentitySource::QueryString),
        ("StageVariables", IdentitySource::StageVariable),
        ("Context", IdentitySource::Context),
    ] {
        let names = resolve_if(doc, &identity_doc[key]);
        for source in names.as_sequence().into_iter().flatten() {
            let source =
                resolve(doc, source).ok_or_else(|| format!("authorizer {name}: Identity.{key}"))?;
            identity.push(make(source));
        }
    }
    let ttl_seconds = match identity_doc.get("ReauthorizeEvery") {
        None => 300,
        Some(v) => resolve(doc, v)
            .and_then(|t| t.parse().ok())
            .ok_or_else(|| format!("authorizer {name}: ReauthorizeEvery"))?,
    };
    Ok(AuthorizerDefinition {
        function,
        identity,
        ttl_seconds,
    })
}

/// Every event of type `event_type` (`Api`, `HttpApi`) of every function.
fn routes(doc: &Value, event_type: &str) -> Result<Vec<ApiRoute>, String> {
    let resources = doc["Resources"]
        .as_mapping()
        .ok_or("template has no Resources")?;
    let mut routes = Vec::new();
    for (logical_id, resource) in resources {
        if s(resource, &["Type"]) != Some("AWS::Serverless::Function") {
            continue;
        }
        let logical_id = logical_id.as_str().ok_or("function logical id")?;
        let events = resource["Properties"]["Events"].as_mapping();
        for (name, event) in events.into_iter().flatten() {
            if s(event, &["Type"]) != Some(event_type) {
                continue;
            }
            let at = || format!("{logical_id}.Events.{}", name.as_str().unwrap_or("?"));
            let p = &event["Properties"];
            let method = s(p, &["Method"]).ok_or_else(|| format!("{}: no Method", at()))?;
            let path = s(p, &["Path"]).ok_or_else(|| format!("{}: no Path", at()))?;
            let authorized = s(p, &["Auth", "Authorizer"]) != Some("NONE");
            routes.push(ApiRoute {
                method: method.to_ascii_uppercase(),
                resource: path.to_string(),
                function: function_binary(doc, logical_id)?,
                authorized,
            });
        }
    }
    Ok(routes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_elsewhere_in_the_template_do_not_break_parsing() {
        let text = r#"
Resources:
  T:
    Type: AWS::DynamoDB::Table
    Properties:
      TableName: !Sub "${AWS::StackName}-t"
      AttributeDefinitions: [{AttributeName: PK, AttributeType: S}]
      KeySchema: [{AttributeName: PK, KeyType: HASH}]
Outputs:
  N: {Value: !Ref T}
"#;
        let def = table_definition(&serde_yaml::from_str(text).unwrap());
        assert_eq!(def.hash_key, "PK");
        assert_eq!(def.range_key, None);
        assert_eq!(def.billing_mode, "PROVISIONED");
    }
}
