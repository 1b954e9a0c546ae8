//! IAM as `template.yaml` grants it: each function's identity-based policy
//! (the statements of its `Policies`, plus the managed policy SAM attaches
//! to a function with a DynamoDB stream event), with the template's
//! intrinsics resolved for the table a request names, evaluated as IAM
//! evaluates one principal's identity policies: an explicit Deny wins, then
//! an Allow, and anything not allowed is denied.
//!
//! The table's ARNs are DynamoDB Local's
//! (`arn:aws:dynamodb:ddblocal:000000000000:table/NAME`). Whatever the check
//! cannot read (a `Condition`, `NotAction`, a SAM policy template that grants
//! DynamoDB actions) is refused when the template is read, never skipped.

use std::collections::BTreeMap;

use serde_yaml::{Mapping, Value};

use authz_core::policy::iam::{action_matches, arn_matches};

/// The region DynamoDB Local writes into its ARNs.
pub const REGION: &str = "ddblocal";
/// The account DynamoDB Local writes into its ARNs.
pub const ACCOUNT: &str = "000000000000";

/// The ARN of a table, as DynamoDB Local reports it.
pub fn table_arn(table: &str) -> String {
    format!("arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/{table}")
}

/// The statements of AWS's managed policy `AWSLambdaDynamoDBExecutionRole`
/// (its DynamoDB part), which SAM attaches to a function that has a
/// `DynamoDB` event: the event source mapping reads the stream with the
/// function's role.
const STREAM_READ_ACTIONS: &[&str] = &[
    "dynamodb:DescribeStream",
    "dynamodb:GetRecords",
    "dynamodb:GetShardIterator",
    "dynamodb:ListStreams",
];

/// The `Sid` of the stream-read statement SAM implies (it is not in the
/// template, so it cannot be edited there).
pub const SAM_STREAM_SID: &str = "SamDynamoDBStreamEvent";

/// SAM policy templates and managed policies that grant nothing in DynamoDB.
const NOT_DYNAMODB: &[&str] = &[
    "SQSSendMessagePolicy",
    "SQSPollerPolicy",
    "SNSPublishMessagePolicy",
    "CloudWatchPutMetricPolicy",
    "AWSLambdaBasicExecutionRole",
];

/// A part of a resource as the template writes it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Text(String),
    /// The table's `Arn` attribute.
    TableArn,
    /// The table's `StreamArn` attribute (its latest stream).
    StreamArn,
    /// `!Ref` of the table: its name.
    TableName,
    /// Another resource of the stack (a queue): it names no DynamoDB
    /// resource, so it matches none.
    Elsewhere,
    /// `!Ref` of another resource or parameter (the API, its stage): what
    /// the stack's [`Policies::with_refs`] says it is, else nothing.
    Ref(String),
}

/// One statement of a policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Statement {
    pub sid: Option<String>,
    pub allow: bool,
    /// Action patterns (`dynamodb:GetItem`, `dynamodb:Get*`).
    pub actions: Vec<String>,
    resources: Vec<Vec<Piece>>,
}

impl Statement {
    /// The resource patterns, resolved for `table`; `None` for one that
    /// names no DynamoDB resource of that table.
    fn resources_for<'a>(
        &'a self,
        table: Option<&str>,
        refs: &'a BTreeMap<String, String>,
    ) -> impl Iterator<Item = String> + 'a {
        let table = table.map(str::to_string);
        self.resources.iter().filter_map(move |pieces| {
            let mut out = String::new();
            for piece in pieces {
                match (piece, &table) {
                    (Piece::Text(t), _) => out.push_str(t),
                    (Piece::Ref(name), _) => out.push_str(refs.get(name)?),
                    (Piece::TableArn, Some(t)) => out.push_str(&table_arn(t)),
                    (Piece::StreamArn, Some(t)) => {
                        out.push_str(&table_arn(t));
                        out.push_str("/stream/*");
                    }
                    (Piece::TableName, Some(t)) => out.push_str(t),
                    _ => return None,
                }
            }
            Some(out)
        })
    }
}

/// What IAM answers for one action on one resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    Allow,
    /// No statement allows it.
    ImplicitDeny,
    /// A statement denies it.
    ExplicitDeny,
}

/// Every function's policy, by the binary it is built from (whose IAM role
/// it runs as).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policies {
    functions: BTreeMap<String, Vec<Statement>>,
    /// What `!Ref`s of other resources and parameters are in this stack.
    refs: BTreeMap<String, String>,
}

impl Policies {
    /// Reads every `AWS::Serverless::Function`'s policy from a template.
    pub fn from_template(doc: &Value) -> Result<Self, String> {
        let resources = doc["Resources"]
            .as_mapping()
            .ok_or("template has no Resources")?;
        let tables: Vec<&str> = resources
            .iter()
            .filter(|(_, r)| r["Type"].as_str() == Some("AWS::DynamoDB::Table"))
            .filter_map(|(id, _)| id.as_str())
            .collect();
        let [table] = tables.as_slice() else {
            return Err(format!(
                "the IAM check expects one table, the template has {}",
                tables.len()
            ));
        };
        let mut functions = BTreeMap::new();
        for (id, resource) in resources {
            if resource["Type"].as_str() != Some("AWS::Serverless::Function") {
                continue;
            }
            let id = id.as_str().ok_or("a function's logical id")?;
            let name = resource["Metadata"]["BuildProperties"]["Binary"]
                .as_str()
                .unwrap_or(id)
                .to_string();
            let at = |what: &str| format!("{id}: {what}");
            let mut statements = Vec::new();
            for policy in resource["Properties"]["Policies"]
                .as_sequence()
                .into_iter()
                .flatten()
            {
                statements.extend(policy_statements(policy, table).map_err(|e| at(&e))?);
            }
            let events = resource["Properties"]["Events"].as_mapping();
            if events
                .into_iter()
                .flatten()
                .any(|(_, e)| e["Type"].as_str() == Some("DynamoDB"))
            {
                statements.push(Statement {
                    sid: Some(SAM_STREAM_SID.into()),
                    allow: true,
                    actions: STREAM_READ_ACTIONS.iter().map(|a| a.to_string()).collect(),
                    resources: vec![vec![Piece::Text("*".into())]],
                });
            }
            functions.insert(name, statements);
        }
        Ok(Self {
            functions,
            refs: BTreeMap::new(),
        })
    }

    /// Adds the statements of `doc`'s `AWS::IAM::Policy` resources (another
    /// stack's) to the functions whose roles they attach to: a role named
    /// by `Fn::ImportValue` of an export ending `-{export}` is `function`'s,
    /// for each `(export, function)` of `exports` (the protected API's
    /// stack granting the authz stack's recompute role the flush of its
    /// own stage).
    pub fn attached(mut self, doc: &Value, exports: &[(&str, &str)]) -> Result<Self, String> {
        let resources = doc["Resources"]
            .as_mapping()
            .ok_or("template has no Resources")?;
        for (id, resource) in resources {
            if resource["Type"].as_str() != Some("AWS::IAM::Policy") {
                continue;
            }
            let id = id.as_str().unwrap_or("?");
            let imported = |role: &Value| -> Option<String> {
                let inner = match role {
                    Value::Tagged(t) if t.tag == "ImportValue" => &t.value,
                    Value::Mapping(m) => m.get("Fn::ImportValue")?,
                    _ => return None,
                };
                let name = match inner {
                    Value::String(s) => s.clone(),
                    Value::Tagged(t) if t.tag == "Sub" => t.value.as_str()?.to_string(),
                    Value::Mapping(m) => m.get("Fn::Sub")?.as_str()?.to_string(),
                    _ => return None,
                };
                Some(name)
            };
            for role in resource["Properties"]["Roles"]
                .as_sequence()
                .into_iter()
                .flatten()
            {
                let Some(name) = imported(role) else { continue };
                let Some((_, function)) = exports
                    .iter()
                    .find(|(export, _)| name.ends_with(&format!("-{export}")))
                else {
                    continue;
                };
                let statements = policy_statements(&resource["Properties"]["PolicyDocument"], "")
                    .map_err(|e| format!("{id}: {e}"))?;
                self.functions
                    .entry(function.to_string())
                    .or_default()
                    .extend(statements);
            }
        }
        Ok(self)
    }

    /// Resolves `!Ref`s of resources and parameters other than the table
    /// (`AuthzApi` to the API's id, `StageName` to its stage) as this stack
    /// has them.
    pub fn with_refs<'a>(mut self, refs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        self.refs.extend(
            refs.into_iter()
                .map(|(k, v)| (k.to_string(), v.to_string())),
        );
        self
    }

    /// The functions (their binaries) the template defines.
    pub fn functions(&self) -> impl Iterator<Item = &str> {
        self.functions.keys().map(String::as_str)
    }

    /// A function's statements.
    pub fn statements(&self, function: &str) -> Option<&[Statement]> {
        self.functions.get(function).map(Vec::as_slice)
    }

    /// Whether a statement of `function`'s policy allows `action` on any
    /// resource: a refusal without one refuses the action itself (what
    /// removing it from the policy causes), not one resource.
    pub fn allows_action(&self, function: &str, action: &str) -> bool {
        self.functions.get(function).is_some_and(|statements| {
            statements
                .iter()
                .any(|s| s.allow && s.actions.iter().any(|a| action_matches(a, action)))
        })
    }

    /// IAM's decision for `function` doing `action` on `resource` (an ARN,
    /// or `*` for actions on no resource). `table` is the table the
    /// resource belongs to when it is an instance of the template's table;
    /// template references to the table resolve to nothing otherwise.
    pub fn decide(
        &self,
        function: &str,
        action: &str,
        resource: &str,
        table: Option<&str>,
    ) -> Decision {
        let Some(statements) = self.functions.get(function) else {
            return Decision::ImplicitDeny;
        };
        let applies = |s: &Statement| {
            s.actions.iter().any(|a| action_matches(a, action))
                && s.resources_for(table, &self.refs)
                    .any(|r| arn_matches(&r, resource))
        };
        if statements.iter().any(|s| !s.allow && applies(s)) {
            Decision::ExplicitDeny
        } else if statements.iter().any(|s| s.allow && applies(s)) {
            Decision::Allow
        } else {
            Decision::ImplicitDeny
        }
    }
}

/// The statements of one entry of a function's `Policies`.
fn policy_statements(policy: &Value, table: &str) -> Result<Vec<Statement>, String> {
    match policy {
        Value::String(name) => {
            let short = name.rsplit('/').next().unwrap_or(name);
            if NOT_DYNAMODB.contains(&short) {
                Ok(Vec::new())
            } else {
                Err(format!(
                    "managed policy {name}: the IAM check does not know what it grants"
                ))
            }
        }
        Value::Mapping(map) if map.contains_key("Statement") => {
            let list = match &map["Statement"] {
                Value::Sequence(list) => list.clone(),
                single @ Value::Mapping(_) => vec![single.clone()],
                _ => return Err("Statement must be a list or a mapping".into()),
            };
            list.iter().map(|s| statement(s, table)).collect()
        }
        Value::Mapping(map) if map.len() == 1 => {
            let name = map.keys().next().and_then(Value::as_str).unwrap_or("?");
            if NOT_DYNAMODB.contains(&name) {
                Ok(Vec::new())
            } else {
                Err(format!(
                    "SAM policy template {name}: the IAM check does not expand it; write its statements out"
                ))
            }
        }
        other => Err(format!("a policy the IAM check cannot read: {other:?}")),
    }
}

fn statement(s: &Value, table: &str) -> Result<Statement, String> {
    let map = s.as_mapping().ok_or("a statement must be a mapping")?;
    let sid = map.get("Sid").and_then(Value::as_str).map(str::to_string);
    let at = |what: String| format!("statement {}: {what}", sid.as_deref().unwrap_or("?"));
    for key in map.keys().filter_map(Value::as_str) {
        if !matches!(key, "Sid" | "Effect" | "Action" | "Resource") {
            return Err(at(format!("{key} is not supported by the IAM check")));
        }
    }
    let allow = match map.get("Effect").and_then(Value::as_str) {
        Some("Allow") => true,
        Some("Deny") => false,
        other => return Err(at(format!("Effect {other:?}"))),
    };
    let actions = strings(map.get("Action"))
        .map_err(|e| at(format!("Action: {e}")))?
        .into_iter()
        .map(|a| {
            a.as_str()
                .map(str::to_string)
                .ok_or("an action must be a string")
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| at(e.into()))?;
    let resources = strings(map.get("Resource"))
        .map_err(|e| at(format!("Resource: {e}")))?
        .iter()
        .map(|r| resource(r, table))
        .collect::<Result<Vec<_>, _>>()
        .map_err(at)?;
    Ok(Statement {
        sid,
        allow,
        actions,
        resources,
    })
}

/// A value or a list of values.
fn strings(v: Option<&Value>) -> Result<Vec<Value>, String> {
    match v {
        None => Err("missing".into()),
        Some(Value::Sequence(list)) => Ok(list.clone()),
        Some(one) => Ok(vec![one.clone()]),
    }
}

/// A resource, with `!GetAtt`, `!Ref` and `!Sub` (short or long form)
/// resolved to pieces.
fn resource(v: &Value, table: &str) -> Result<Vec<Piece>, String> {
    let (tag, inner) = match v {
        Value::String(s) => return Ok(vec![Piece::Text(s.clone())]),
        Value::Tagged(t) => (
            t.tag.to_string().trim_start_matches('!').to_string(),
            &t.value,
        ),
        Value::Mapping(m) if m.len() == 1 => {
            let (k, inner) = m.iter().next().expect("one entry");
            let k = k.as_str().unwrap_or_default();
            (k.trim_start_matches("Fn::").to_string(), inner)
        }
        other => return Err(format!("a resource the IAM check cannot read: {other:?}")),
    };
    match tag.as_str() {
        "GetAtt" => {
            let (id, attribute) = match inner {
                Value::String(s) => s
                    .split_once('.')
                    .map(|(a, b)| (a.to_string(), b.to_string()))
                    .ok_or_else(|| format!("!GetAtt {s}"))?,
                Value::Sequence(parts) if parts.len() == 2 => (
                    parts[0].as_str().unwrap_or_default().to_string(),
                    parts[1].as_str().unwrap_or_default().to_string(),
                ),
                other => return Err(format!("!GetAtt {other:?}")),
            };
            Ok(vec![attribute_piece(&id, &attribute, table)?])
        }
        "Ref" => Ok(vec![reference(inner.as_str().unwrap_or_default(), table)]),
        "Sub" => {
            let text = inner
                .as_str()
                .ok_or("!Sub with a variable map is not supported by the IAM check")?;
            substitute(text, table)
        }
        other => Err(format!(
            "!{other} in a resource is not supported by the IAM check"
        )),
    }
}

fn attribute_piece(id: &str, attribute: &str, table: &str) -> Result<Piece, String> {
    if id != table {
        return Ok(Piece::Elsewhere);
    }
    match attribute {
        "Arn" => Ok(Piece::TableArn),
        "StreamArn" => Ok(Piece::StreamArn),
        other => Err(format!("!GetAtt {id}.{other} is not an ARN")),
    }
}

fn reference(name: &str, table: &str) -> Piece {
    match name {
        "AWS::Region" => Piece::Text(REGION.into()),
        "AWS::AccountId" => Piece::Text(ACCOUNT.into()),
        "AWS::Partition" => Piece::Text("aws".into()),
        "AWS::URLSuffix" => Piece::Text("amazonaws.com".into()),
        n if n == table => Piece::TableName,
        other => Piece::Ref(other.to_string()),
    }
}

/// `!Sub "${AuthzTable.Arn}/index/*"`: text with `${Name}` and
/// `${Resource.Attribute}` references.
fn substitute(text: &str, table: &str) -> Result<Vec<Piece>, String> {
    let mut pieces = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        if start > 0 {
            pieces.push(Piece::Text(rest[..start].to_string()));
        }
        let end = rest[start..]
            .find('}')
            .ok_or_else(|| format!("!Sub {text}: unclosed ${{"))?
            + start;
        let name = &rest[start + 2..end];
        pieces.push(match name.split_once('.') {
            Some((id, attribute)) if !name.starts_with("AWS::") => {
                attribute_piece(id, attribute, table)?
            }
            _ => reference(name, table),
        });
        rest = &rest[end + 1..];
    }
    if !rest.is_empty() {
        pieces.push(Piece::Text(rest.to_string()));
    }
    Ok(pieces)
}

/// Removes one action from one function's statements in a template (a
/// mutation: what the template would say without it). `false` when the
/// function's statements do not name it.
pub fn remove_action(doc: &mut Value, function: &str, action: &str) -> bool {
    let Some(resources) = doc.get_mut("Resources").and_then(Value::as_mapping_mut) else {
        return false;
    };
    let mut removed = false;
    for (id, resource) in resources.iter_mut() {
        let binary = resource["Metadata"]["BuildProperties"]["Binary"]
            .as_str()
            .or(id.as_str())
            .map(str::to_string);
        if binary.as_deref() != Some(function) {
            continue;
        }
        let policies = resource
            .get_mut("Properties")
            .and_then(|p| p.get_mut("Policies"))
            .and_then(Value::as_sequence_mut);
        for policy in policies.into_iter().flatten() {
            let Some(statements) = policy
                .as_mapping_mut()
                .and_then(|m: &mut Mapping| m.get_mut("Statement"))
                .and_then(Value::as_sequence_mut)
            else {
                continue;
            };
            for s in statements.iter_mut() {
                match s.get_mut("Action") {
                    Some(Value::Sequence(list)) => {
                        let before = list.len();
                        list.retain(|a| a.as_str() != Some(action));
                        removed |= list.len() != before;
                    }
                    Some(single) if single.as_str() == Some(action) => {
                        *single = Value::Sequence(Vec::new());
                        removed = true;
                    }
                    _ => {}
                }
            }
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEMPLATE: &str = r#"
Resources:
  T:
    Type: AWS::DynamoDB::Table
  Q:
    Type: AWS::SQS::Queue
  Reader:
    Type: AWS::Serverless::Function
    Metadata: {BuildProperties: {Binary: reader}}
    Properties:
      Policies:
        - Statement:
            - Effect: Allow
              Action: [dynamodb:GetItem, dynamodb:Query]
              Resource: [!GetAtt T.Arn, !Sub "${T.Arn}/index/*"]
            - Effect: Deny
              Action: dynamodb:Query
              Resource: !Sub "arn:aws:dynamodb:${AWS::Region}:${AWS::AccountId}:table/${T}/index/Secret"
        - SQSSendMessagePolicy: {QueueName: !GetAtt Q.QueueName}
      Events:
        S: {Type: DynamoDB, Properties: {Stream: !GetAtt T.StreamArn}}
"#;

    fn policies() -> Policies {
        Policies::from_template(&serde_yaml::from_str(TEMPLATE).unwrap()).unwrap()
    }

    #[test]
    fn allows_only_what_a_statement_allows_on_the_right_table() {
        let p = policies();
        let arn = table_arn("t1");
        let decide =
            |action: &str, resource: &str| p.decide("reader", action, resource, Some("t1"));
        assert_eq!(decide("dynamodb:GetItem", &arn), Decision::Allow);
        assert_eq!(decide("dynamodb:PutItem", &arn), Decision::ImplicitDeny);
        assert_eq!(
            decide("dynamodb:Query", &format!("{arn}/index/GSI1")),
            Decision::Allow
        );
        assert_eq!(
            decide("dynamodb:Query", &format!("{arn}/index/Secret")),
            Decision::ExplicitDeny
        );
        // Another table is not the template's table.
        assert_eq!(
            p.decide("reader", "dynamodb:GetItem", &table_arn("other"), None),
            Decision::ImplicitDeny
        );
        // SAM's stream-read policy for the DynamoDB event.
        assert_eq!(
            decide(
                "dynamodb:GetRecords",
                &format!("{arn}/stream/2026-01-01T00:00:00.000")
            ),
            Decision::Allow
        );
        assert_eq!(
            p.decide("nobody", "dynamodb:GetItem", &arn, Some("t1")),
            Decision::ImplicitDeny
        );
    }

    #[test]
    fn what_the_check_cannot_read_is_refused_not_skipped() {
        for (policy, expected) in [
            ("- DynamoDBCrudPolicy: {TableName: !Ref T}", "does not expand"),
            ("- AmazonDynamoDBFullAccess", "does not know"),
            (
                "- Statement: [{Effect: Allow, Action: dynamodb:GetItem, Resource: '*', Condition: {}}]",
                "Condition is not supported",
            ),
        ] {
            let text = format!(
                "Resources:\n  T: {{Type: AWS::DynamoDB::Table}}\n  F:\n    Type: AWS::Serverless::Function\n    Properties:\n      Policies:\n        {policy}\n"
            );
            let err = Policies::from_template(&serde_yaml::from_str(&text).unwrap()).unwrap_err();
            assert!(err.contains(expected), "{err}");
        }
    }

    #[test]
    fn an_action_removed_is_no_longer_allowed() {
        let mut doc: Value = serde_yaml::from_str(TEMPLATE).unwrap();
        assert!(policies().allows_action("reader", "dynamodb:GetItem"));
        assert!(remove_action(&mut doc, "reader", "dynamodb:GetItem"));
        assert!(!remove_action(&mut doc, "reader", "dynamodb:GetItem"));
        let p = Policies::from_template(&doc).unwrap();
        let arn = table_arn("t1");
        assert_eq!(
            p.decide("reader", "dynamodb:GetItem", &arn, Some("t1")),
            Decision::ImplicitDeny
        );
        assert_eq!(
            p.decide("reader", "dynamodb:Query", &arn, Some("t1")),
            Decision::Allow
        );
        // Refused on every resource now, and nobody else's to begin with.
        assert!(!p.allows_action("reader", "dynamodb:GetItem"));
        assert!(p.allows_action("reader", "dynamodb:Query"));
        assert!(!p.allows_action("writer", "dynamodb:Query"));
    }
}
