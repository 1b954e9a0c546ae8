//! SCIM's two small languages, over a User resource: PATCH operations
//! (RFC 7644 §3.5.2) applied to the resource as JSON, as Okta and Entra ID
//! send them; and list filters, answered by a guard lookup (an `eq` on a
//! unique attribute) and checked in full on what it finds. Paths and
//! filters are parsed by `scim_v2`'s grammar.

use scim_v2::filter::{AttrExp, AttrPath, CompValue, CompareOp, Filter, PatchPath, ValFilter};
use serde_json::{Map, Value};

use super::scim::{attr, guarded, ScimError, GROUP_SCHEMA, USER_SCHEMA};
use authz_core::model::items::{DirectoryUser, EXTERNAL_ID, USER_NAME, WORK_EMAIL};
use authz_core::model::values::{DirectoryUserId, TenantId};
use authz_core::Store;

/// What a resource type keeps: its schema, its attributes as spelled in
/// its resources, and its multi-valued attribute (whose elements value
/// filters pick).
pub struct Shape {
    pub schema: &'static str,
    pub kept: &'static [&'static str],
    pub multi: &'static str,
}

pub const USER: Shape = Shape {
    schema: USER_SCHEMA,
    kept: &[
        "userName",
        "externalId",
        "name",
        "displayName",
        "emails",
        "active",
    ],
    multi: "emails",
};

pub const GROUP: Shape = Shape {
    schema: GROUP_SCHEMA,
    kept: &["displayName", "externalId", "members"],
    multi: "members",
};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Add,
    Replace,
    Remove,
}

/// Applies one operation to `view`. Attributes this service does not keep
/// (the enterprise extension, titles, phone numbers) are accepted and
/// ignored, as directories send them whatever the app keeps.
pub fn apply(
    shape: &Shape,
    view: &mut Map<String, Value>,
    operation: &Value,
) -> Result<(), ScimError> {
    let Value::Object(operation) = operation else {
        return Err(ScimError::invalid_syntax(
            "each of Operations must be an object",
        ));
    };
    let op = match attr(operation, "op").and_then(Value::as_str) {
        Some(op) if op.eq_ignore_ascii_case("add") => Op::Add,
        Some(op) if op.eq_ignore_ascii_case("replace") => Op::Replace,
        Some(op) if op.eq_ignore_ascii_case("remove") => Op::Remove,
        _ => {
            return Err(ScimError::invalid_syntax(
                "op must be add, replace or remove",
            ))
        }
    };
    let value = attr(operation, "value").cloned();
    let path = match attr(operation, "path") {
        None => None,
        Some(Value::String(p)) => Some(p.as_str()),
        Some(_) => return Err(ScimError::invalid_path("path must be a string")),
    };
    match (path, op) {
        (None, Op::Remove) => Err(ScimError::bad_no_target(
            "remove needs a path (RFC 7644 §3.5.2.2)",
        )),
        (None, _) => {
            let Some(Value::Object(values)) = value else {
                return Err(ScimError::invalid_syntax(
                    "an add or replace without a path needs an object value",
                ));
            };
            for (key, v) in values {
                if key.eq_ignore_ascii_case("id") {
                    read_only_id(view, op, Some(&v))?;
                } else if key.contains('[') {
                    // A key that is a path with a value filter (Entra ID's
                    // `emails[type eq "work"].value`): applied as that path.
                    apply_at(shape, view, op, &key, Some(v))?;
                } else {
                    set(shape, view, &key, v, op)?;
                }
            }
            Ok(())
        }
        (Some(path), _) => apply_at(shape, view, op, path, value),
    }
}

/// Applies one operation at `path` (RFC 7644 §3.5.2's attribute path, a
/// value filter allowed).
fn apply_at(
    shape: &Shape,
    view: &mut Map<String, Value>,
    op: Op,
    path: &str,
    value: Option<Value>,
) -> Result<(), ScimError> {
    let parsed: PatchPath = path
        .parse()
        .map_err(|e| ScimError::invalid_path(format!("path {path:?}: {e}")))?;
    match parsed {
        PatchPath::Attr(a) => {
            if in_core(shape, &a) && a.name.eq_ignore_ascii_case("id") {
                return read_only_id(view, op, value.as_ref());
            }
            let Some(key) = core_key(shape, &a) else {
                return Ok(());
            };
            match (op, value) {
                // Entra ID removes members by listing them.
                (Op::Remove, Some(Value::Array(listed))) if key == shape.multi => {
                    remove_listed(view, shape.multi, &listed)
                }
                // One element, not in a list: the same.
                (Op::Remove, Some(one @ Value::Object(_))) if key == shape.multi => {
                    remove_listed(view, shape.multi, &[one])
                }
                // Anything else beside a remove of the whole
                // attribute would empty it on a misreading.
                (Op::Remove, Some(other)) if key == shape.multi => {
                    Err(ScimError::invalid_value(format!(
                        "a remove of {key} takes the elements to remove as a list of {{\"value\": …}}, not {other}"
                    )))
                }
                (Op::Remove, _) => {
                    remove(view, &key);
                    Ok(())
                }
                (_, value) => set(
                    shape,
                    view,
                    &key,
                    value.ok_or_else(|| ScimError::invalid_syntax("value is required"))?,
                    op,
                ),
            }
        }
        PatchPath::Value(vp) => {
            if !(vp.attr.name.eq_ignore_ascii_case(shape.multi) && in_core(shape, &vp.attr)) {
                return Ok(());
            }
            on_multi(
                shape.multi,
                view,
                &vp.filter,
                vp.sub_attr.as_deref(),
                op,
                value,
            )
        }
    }
}

/// `id` is read-only (RFC 7643 §3.1): sent back as it is (Okta's pathless
/// replace carries it) it changes nothing; any other value, or removing
/// it, is a `mutability` error.
fn read_only_id(view: &Map<String, Value>, op: Op, value: Option<&Value>) -> Result<(), ScimError> {
    match (op, value) {
        (Op::Add | Op::Replace, Some(v)) if view.get("id") == Some(v) => Ok(()),
        _ => Err(ScimError::mutability(
            "id is read-only: it cannot be changed or removed",
        )),
    }
}

impl ScimError {
    fn bad_no_target(detail: &str) -> Self {
        ScimError::invalid_syntax(detail).with_type("noTarget")
    }
}

/// Whether a path is of the resource's core schema (no URN, or its URN).
fn in_core(shape: &Shape, path: &AttrPath) -> bool {
    path.uri
        .as_deref()
        .is_none_or(|u| u.eq_ignore_ascii_case(shape.schema))
}

/// `name` or `name.givenName` for a kept attribute of the core schema;
/// `None` for anything else.
fn core_key(shape: &Shape, path: &AttrPath) -> Option<String> {
    if !in_core(shape, path) {
        return None;
    }
    let name = shape
        .kept
        .iter()
        .find(|k| k.eq_ignore_ascii_case(&path.name))?;
    Some(match &path.sub_attr {
        Some(sub) => format!("{name}.{sub}"),
        None => name.to_string(),
    })
}

/// Sets `key` (a kept attribute, `a.b` for a sub-attribute, or a URN-
/// prefixed one) to `value`; adding to the multi-valued attribute appends.
fn set(
    shape: &Shape,
    view: &mut Map<String, Value>,
    key: &str,
    value: Value,
    op: Op,
) -> Result<(), ScimError> {
    let key = match key.strip_prefix("urn:") {
        Some(_) => match key
            .to_ascii_lowercase()
            .strip_prefix(&format!("{}:", shape.schema.to_ascii_lowercase()))
        {
            Some(_) => key[shape.schema.len() + 1..].to_string(),
            // The enterprise extension (or another schema): not kept.
            None => return Ok(()),
        },
        None => key.to_string(),
    };
    let (name, sub) = match key.split_once('.') {
        Some((n, s)) => (n, Some(s)),
        None => (key.as_str(), None),
    };
    let Some(name) = shape.kept.iter().find(|k| k.eq_ignore_ascii_case(name)) else {
        return Ok(());
    };
    match sub {
        Some(sub) => {
            let parent = view
                .entry(name.to_string())
                .or_insert_with(|| Value::Object(Map::new()));
            if !parent.is_object() {
                *parent = Value::Object(Map::new());
            }
            let parent = parent.as_object_mut().expect("made an object");
            let existing = parent
                .keys()
                .find(|k| k.eq_ignore_ascii_case(sub))
                .cloned()
                .unwrap_or_else(|| sub.to_string());
            parent.insert(existing, value);
        }
        None if *name == shape.multi && op == Op::Add => {
            let added = match value {
                Value::Array(list) => list,
                other => vec![other],
            };
            let list = view
                .entry(shape.multi.to_string())
                .or_insert_with(|| Value::Array(Vec::new()));
            if !list.is_array() {
                *list = Value::Array(Vec::new());
            }
            let list = list.as_array_mut().expect("made an array");
            for element in added {
                if !list.contains(&element) {
                    list.push(element);
                }
            }
        }
        None => match (view.get_mut(*name), value) {
            // A complex attribute (`name`) takes the sub-attributes given
            // and keeps the others (RFC 7644 §3.5.2.1, §3.5.2.3).
            (Some(Value::Object(existing)), Value::Object(given)) => {
                for (sub, v) in given {
                    let key = existing
                        .keys()
                        .find(|k| k.eq_ignore_ascii_case(&sub))
                        .cloned()
                        .unwrap_or(sub);
                    existing.insert(key, v);
                }
            }
            (_, value) => {
                view.insert(name.to_string(), value);
            }
        },
    }
    Ok(())
}

/// Removes the elements of `multi` whose `value` one of `listed` names;
/// a listed element that names none (no string `value`) is refused, so
/// that a removal the directory believes done is never a silent no-op.
fn remove_listed(
    view: &mut Map<String, Value>,
    multi: &str,
    listed: &[Value],
) -> Result<(), ScimError> {
    let value_of = |v: &Value| {
        v.get("value")
            .and_then(Value::as_str)
            .map(str::to_ascii_lowercase)
    };
    let mut gone = std::collections::HashSet::new();
    for element in listed {
        let Some(value) = value_of(element) else {
            return Err(ScimError::invalid_value(format!(
                "a remove of {multi} takes the elements to remove as a list of {{\"value\": …}}, not {element}"
            )));
        };
        gone.insert(value);
    }
    if let Some(Value::Array(list)) = view.get_mut(multi) {
        list.retain(|e| value_of(e).is_none_or(|v| !gone.contains(&v)));
    }
    Ok(())
}

fn remove(view: &mut Map<String, Value>, key: &str) {
    match key.split_once('.') {
        Some((name, sub)) => {
            if let Some(Value::Object(parent)) = view.get_mut(name) {
                parent.retain(|k, _| !k.eq_ignore_ascii_case(sub));
            }
        }
        None => {
            view.remove(key);
        }
    }
}

/// An operation on the elements a filter picks (`emails[type eq
/// "work"].value`, `members[value eq "..."]`): a replace or add with none
/// picked adds one with the filter's values (what Entra ID expects of its
/// default mapping).
fn on_multi(
    multi: &str,
    view: &mut Map<String, Value>,
    filter: &ValFilter,
    sub: Option<&str>,
    op: Op,
    value: Option<Value>,
) -> Result<(), ScimError> {
    let list = view
        .entry(multi.to_string())
        .or_insert_with(|| Value::Array(Vec::new()));
    if !list.is_array() {
        *list = Value::Array(Vec::new());
    }
    let list = list.as_array_mut().expect("made an array");
    let mut picked = Vec::new();
    for (i, email) in list.iter().enumerate() {
        if element_matches(email, filter)? {
            picked.push(i);
        }
    }
    match op {
        Op::Remove => {
            match sub {
                Some(sub) => {
                    for &i in &picked {
                        if let Value::Object(e) = &mut list[i] {
                            e.retain(|k, _| !k.eq_ignore_ascii_case(sub));
                        }
                    }
                }
                None => {
                    let mut i = 0;
                    list.retain(|_| {
                        let keep = !picked.contains(&i);
                        i += 1;
                        keep
                    });
                }
            }
            Ok(())
        }
        Op::Add | Op::Replace => {
            let value = value.ok_or_else(|| ScimError::invalid_syntax("value is required"))?;
            if picked.is_empty() {
                let mut made = Map::new();
                for (name, v) in equalities(filter) {
                    made.insert(name, v);
                }
                list.push(Value::Object(made));
                picked.push(list.len() - 1);
            }
            for &i in &picked {
                let Value::Object(e) = &mut list[i] else {
                    continue;
                };
                match (sub, &value) {
                    (Some(sub), v) => {
                        e.insert(sub.to_string(), v.clone());
                    }
                    (None, Value::Object(fields)) => {
                        for (k, v) in fields {
                            e.insert(k.clone(), v.clone());
                        }
                    }
                    (None, _) => return Err(ScimError::invalid_syntax(
                        "a value filter's add or replace needs a sub-attribute or an object value",
                    )),
                }
            }
            Ok(())
        }
    }
}

/// The `name eq value` pairs of a value filter's `and`s.
fn equalities(filter: &ValFilter) -> Vec<(String, Value)> {
    match filter {
        ValFilter::Attr(AttrExp::Comparison(path, CompareOp::Eq, value)) => {
            vec![(path.name.clone(), comp_json(value))]
        }
        ValFilter::And(a, b) => {
            let mut all = equalities(a);
            all.extend(equalities(b));
            all
        }
        _ => Vec::new(),
    }
}

/// The terms of an address's value filter, each an `eq` on a string,
/// joined by `and`; `None` for anything else (an `or`, another operator,
/// a value that is no string), which is no index lookup.
fn email_terms(filter: &ValFilter) -> Option<Vec<(String, String)>> {
    match filter {
        ValFilter::Attr(AttrExp::Comparison(path, CompareOp::Eq, CompValue::Str(v))) => {
            Some(vec![(path.name.clone(), v.clone())])
        }
        ValFilter::And(a, b) => {
            let mut all = email_terms(a)?;
            all.extend(email_terms(b)?);
            Some(all)
        }
        _ => None,
    }
}

fn comp_json(value: &CompValue) -> Value {
    match value {
        CompValue::False => Value::Bool(false),
        CompValue::True => Value::Bool(true),
        CompValue::Null => Value::Null,
        CompValue::Number(n) => Value::Number(n.clone()),
        CompValue::Str(s) => Value::String(s.clone()),
    }
}

/// Whether one element of a multi-valued attribute matches a value filter
/// (`eq` and `and`, strings compared without case).
fn element_matches(element: &Value, filter: &ValFilter) -> Result<bool, ScimError> {
    match filter {
        ValFilter::Attr(AttrExp::Comparison(path, CompareOp::Eq, value)) => {
            let Value::Object(e) = element else {
                return Ok(false);
            };
            Ok(same(attr(e, &path.name), value))
        }
        ValFilter::And(a, b) => Ok(element_matches(element, a)? && element_matches(element, b)?),
        other => Err(ScimError::invalid_filter(format!(
            "only eq and and are supported in a value filter, not {other:?}"
        ))),
    }
}

/// Whether a JSON value equals a filter's value (strings without case;
/// booleans also as Entra ID's strings).
fn same(found: Option<&Value>, wanted: &CompValue) -> bool {
    match (found, wanted) {
        (Some(Value::String(f)), CompValue::Str(w)) => f.eq_ignore_ascii_case(w),
        (Some(Value::Bool(f)), CompValue::True) => *f,
        (Some(Value::Bool(f)), CompValue::False) => !f,
        (Some(Value::String(f)), CompValue::True) => f.eq_ignore_ascii_case("true"),
        (Some(Value::String(f)), CompValue::False) => f.eq_ignore_ascii_case("false"),
        (None | Some(Value::Null), CompValue::Null) => true,
        (Some(Value::Number(f)), CompValue::Number(w)) => f == w,
        _ => false,
    }
}

/// A filter with its operators and literals (`EQ`, `And`, `True`) in
/// lower case, outside quoted strings: RFC 7644 §3.4.2.2 makes operators
/// case-insensitive, and directories write booleans as `True`; the
/// grammar takes them in lower case only.
pub fn normalized(filter: &str) -> String {
    const WORDS: [&str; 16] = [
        "eq", "ne", "co", "sw", "ew", "gt", "lt", "ge", "le", "pr", "and", "or", "not", "true",
        "false", "null",
    ];
    let mut out = String::with_capacity(filter.len());
    let mut word = String::new();
    let mut quoted = false;
    let mut escaped = false;
    let flush = |word: &mut String, out: &mut String| {
        if WORDS.iter().any(|w| w.eq_ignore_ascii_case(word)) {
            out.push_str(&word.to_ascii_lowercase());
        } else {
            out.push_str(word);
        }
        word.clear();
    };
    for c in filter.chars() {
        if quoted {
            out.push(c);
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => quoted = false,
                _ => {}
            }
        } else if c.is_ascii_alphabetic() {
            word.push(c);
        } else {
            flush(&mut word, &mut out);
            out.push(c);
            quoted = c == '"';
        }
    }
    flush(&mut word, &mut out);
    out
}

/// One clause of a list filter: an attribute and the value it must equal.
#[derive(Debug)]
enum Clause {
    /// A guarded attribute (`userName`, `externalId`).
    Unique(&'static str, String),
    /// An address (guarded whatever its type), and the type its element
    /// must have when the filter names one.
    Email(String, Option<String>),
    Id(String),
    Active(bool),
}

/// Entra ID's address filter, `emails[type eq "work"].value eq "..."`,
/// which is a PATCH path's shape rather than a filter's: the address (of
/// type `work`).
fn entra_address(filter: &str) -> Option<String> {
    let rest = filter.trim();
    let lower = rest.to_ascii_lowercase();
    let head = "emails[type eq \"work\"].value eq ";
    if !lower.starts_with(head) {
        return None;
    }
    let quoted = rest[head.len()..].trim();
    let value: String = serde_json::from_str(quoted).ok()?;
    Some(value)
}

/// The clauses of a filter: `eq` comparisons joined by `and`.
fn clauses(filter: &Filter, out: &mut Vec<Clause>) -> Result<(), ScimError> {
    let unsupported = || {
        ScimError::invalid_filter(
            "only eq comparisons joined by and, on userName, externalId, id, emails and active, are answered (from an index: no scans)",
        )
    };
    match filter {
        Filter::And(a, b) => {
            clauses(a, out)?;
            clauses(b, out)
        }
        Filter::Attr(AttrExp::Comparison(path, CompareOp::Eq, value)) => {
            if !in_core(&USER, path) {
                return Err(unsupported());
            }
            let name = path.name.to_ascii_lowercase();
            match (name.as_str(), path.sub_attr.as_deref(), value) {
                ("id", None, CompValue::Str(v)) => out.push(Clause::Id(v.clone())),
                ("active", None, CompValue::True) => out.push(Clause::Active(true)),
                ("active", None, CompValue::False) => out.push(Clause::Active(false)),
                // A boolean as a string (`active eq "True"`), as some
                // directories write it.
                ("active", None, CompValue::Str(v)) if v.eq_ignore_ascii_case("true") => {
                    out.push(Clause::Active(true))
                }
                ("active", None, CompValue::Str(v)) if v.eq_ignore_ascii_case("false") => {
                    out.push(Clause::Active(false))
                }
                (_, _, CompValue::Str(v)) => match guarded(path).ok_or_else(unsupported)? {
                    WORK_EMAIL => out.push(Clause::Email(v.clone(), None)),
                    attribute => out.push(Clause::Unique(attribute, v.clone())),
                },
                _ => return Err(unsupported()),
            }
            Ok(())
        }
        Filter::ValuePath(vp) if vp.attr.name.eq_ignore_ascii_case("emails") => {
            // emails[value eq "x" and type eq "work"]: every term an eq on
            // value or type, the type checked on the element found.
            let (mut value, mut kind) = (None, None);
            for term in email_terms(&vp.filter).ok_or_else(unsupported)? {
                match term {
                    (name, v) if name.eq_ignore_ascii_case("value") => value = Some(v),
                    (name, v) if name.eq_ignore_ascii_case("type") => kind = Some(v),
                    _ => return Err(unsupported()),
                }
            }
            out.push(Clause::Email(value.ok_or_else(unsupported)?, kind));
            Ok(())
        }
        _ => Err(unsupported()),
    }
}

/// The people a filter finds (none or one): looked up by its first clause
/// on a unique attribute or the id, then every clause checked.
pub async fn filtered(
    store: &Store,
    tenant: &TenantId,
    filter: &str,
) -> Result<Option<DirectoryUser>, ScimError> {
    let mut found = Vec::new();
    match entra_address(filter) {
        Some(address) => found.push(Clause::Email(address, Some("work".into()))),
        None => {
            let parsed: Filter = normalized(filter)
                .parse()
                .map_err(|e| ScimError::invalid_filter(format!("filter {filter:?}: {e}")))?;
            clauses(&parsed, &mut found)?;
        }
    }
    let person = match found.iter().find(|c| !matches!(c, Clause::Active(_))) {
        Some(Clause::Unique(attribute, value)) => {
            store.directory_user_by(tenant, attribute, value).await?
        }
        Some(Clause::Email(value, _)) => store.directory_user_by(tenant, WORK_EMAIL, value).await?,
        Some(Clause::Id(id)) => match DirectoryUserId::parse(id) {
            Ok(id) => store.directory_user(tenant, &id).await?,
            Err(_) => None,
        },
        _ => {
            return Err(ScimError::invalid_filter(
                "a filter must compare userName, externalId, id or an address with eq: the list is answered from an index, never a scan",
            ))
        }
    };
    Ok(person.filter(|p| found.iter().all(|c| holds(p, c))))
}

fn holds(person: &DirectoryUser, clause: &Clause) -> bool {
    // Compared as the index compares them: lower-cased, beyond ASCII too.
    let same_text = |a: &str, b: &str| a == b || a.to_lowercase() == b.to_lowercase();
    match clause {
        Clause::Unique(USER_NAME, v) => same_text(&person.user_name, v),
        Clause::Unique(EXTERNAL_ID, v) => person.external_id.as_deref() == Some(v.as_str()),
        Clause::Unique(_, _) => false,
        Clause::Email(v, kind) => person.emails.iter().any(|e| {
            same_text(&e.value, v)
                && kind
                    .as_deref()
                    .is_none_or(|k| e.kind.as_deref().is_some_and(|t| t.eq_ignore_ascii_case(k)))
        }),
        Clause::Id(id) => person.id.to_string().eq_ignore_ascii_case(id),
        Clause::Active(a) => person.is_active() == *a,
    }
}
