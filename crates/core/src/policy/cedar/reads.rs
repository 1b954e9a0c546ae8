//! What a Cedar statement reads of the request context (`context.x`,
//! `context has x`, or the context whole), as far as caching goes: the
//! source IP (not part of API Gateway's cache key unless configured), the
//! time, and the request's shape (method, path, route).

/// What a statement reads of the request context, as far as caching goes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Reads {
    /// `context.sourceIp`: not part of API Gateway's cache key unless the
    /// authorizer's identity sources include it.
    pub source_ip: bool,
    /// `context.time`: the answer holds for as long as it is cached.
    pub time: bool,
    /// `context.method`, `context.path` or `context.route`: the answer is
    /// for this route only.
    pub request_shape: bool,
}

impl Reads {
    pub(super) fn union(self, other: Reads) -> Reads {
        Reads {
            source_ip: self.source_ip || other.source_ip,
            time: self.time || other.time,
            request_shape: self.request_shape || other.request_shape,
        }
    }

    pub(super) fn attribute(&mut self, name: &str) {
        match name {
            "sourceIp" => self.source_ip = true,
            "time" => self.time = true,
            "method" | "path" | "route" => self.request_shape = true,
            _ => {}
        }
    }

    /// The context read as a whole (`context == {...}`): everything.
    pub(super) fn everything() -> Reads {
        Reads {
            source_ip: true,
            time: true,
            request_shape: true,
        }
    }

    /// From a policy's JSON form: every `context.x` / `context has x`.
    pub(super) fn of(policy: &cedar_policy::Policy) -> Reads {
        fn walk(value: &serde_json::Value, reads: &mut Reads) {
            match value {
                serde_json::Value::Object(map) => {
                    for (key, inner) in map {
                        let on_context = (key == "." || key == "has")
                            && inner.get("left").and_then(|l| l.get("Var"))
                                == Some(&serde_json::Value::from("context"));
                        if on_context {
                            match inner.get("attr").and_then(|a| a.as_str()) {
                                Some(name) => reads.attribute(name),
                                None => *reads = reads.union(Reads::everything()),
                            }
                        } else if key == "Var" && inner == "context" {
                            *reads = reads.union(Reads::everything());
                        } else {
                            walk(inner, reads);
                        }
                    }
                }
                serde_json::Value::Array(items) => items.iter().for_each(|v| walk(v, reads)),
                _ => {}
            }
        }
        let mut reads = Reads::default();
        match policy.to_json() {
            Ok(json) => walk(&json, &mut reads),
            // Not expected for a parsed static policy; assume the worst.
            Err(_) => reads = Reads::everything(),
        }
        reads
    }
}
