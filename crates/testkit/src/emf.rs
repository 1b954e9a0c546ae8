//! Reads CloudWatch Embedded Metric Format (EMF) lines out of a log and
//! checks each against the rules CloudWatch applies before it turns a line
//! into metrics (the EMF specification): a `_aws` object with a millisecond
//! `Timestamp` and `CloudWatchMetrics` directives, each with a `Namespace`,
//! dimension sets of at most 30 names that are string members of the line,
//! and at most 100 metric definitions whose names are number members (or
//! arrays of at most 100 numbers) with a CloudWatch unit.

use std::collections::BTreeMap;

use serde_json::Value;

/// One EMF line, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Document {
    pub namespace: String,
    /// Dimension names and their values (the first dimension set).
    pub dimensions: BTreeMap<String, String>,
    /// Metric names, their values and units.
    pub metrics: BTreeMap<String, (Vec<f64>, Option<String>)>,
    /// The whole line.
    pub line: Value,
}

impl Document {
    /// The value of a metric that has one value.
    pub fn value(&self, name: &str) -> Option<f64> {
        match self.metrics.get(name) {
            Some((values, _)) if values.len() == 1 => Some(values[0]),
            _ => None,
        }
    }

    /// The unit of a metric.
    pub fn unit(&self, name: &str) -> Option<&str> {
        self.metrics.get(name).and_then(|(_, u)| u.as_deref())
    }
}

/// CloudWatch's units.
const UNITS: &[&str] = &[
    "Seconds",
    "Microseconds",
    "Milliseconds",
    "Bytes",
    "Kilobytes",
    "Megabytes",
    "Gigabytes",
    "Terabytes",
    "Bits",
    "Kilobits",
    "Megabits",
    "Gigabits",
    "Terabits",
    "Percent",
    "Count",
    "Bytes/Second",
    "Kilobytes/Second",
    "Megabytes/Second",
    "Gigabytes/Second",
    "Terabytes/Second",
    "Bits/Second",
    "Kilobits/Second",
    "Megabits/Second",
    "Gigabits/Second",
    "Terabits/Second",
    "Count/Second",
    "None",
];

/// The EMF documents among `log`'s lines (those with a `_aws` member), each
/// checked; `Err` names the first rule a line breaks.
pub fn documents(log: &str) -> Result<Vec<Document>, String> {
    log.lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|v| v.get("_aws").is_some())
        .map(|v| check(v.clone()).map_err(|e| format!("{e}: {v}")))
        .collect()
}

/// Checks one EMF line.
pub fn check(line: Value) -> Result<Document, String> {
    let root = line.as_object().ok_or("not an object")?;
    let aws = root["_aws"].as_object().ok_or("_aws is not an object")?;
    let timestamp = aws
        .get("Timestamp")
        .and_then(Value::as_u64)
        .ok_or("_aws.Timestamp is not a whole number")?;
    let now = authz_core::clock::now_millis();
    // CloudWatch takes timestamps up to two weeks old and two hours ahead.
    if timestamp.abs_diff(now) > 2 * 3600 * 1000 {
        return Err(format!(
            "_aws.Timestamp {timestamp} is not milliseconds near now"
        ));
    }
    let directives = aws
        .get("CloudWatchMetrics")
        .and_then(Value::as_array)
        .filter(|d| !d.is_empty())
        .ok_or("_aws.CloudWatchMetrics is not a non-empty array")?;
    let [directive] = directives.as_slice() else {
        return Err("more than one directive (the functions write one)".into());
    };
    let namespace = directive["Namespace"]
        .as_str()
        .filter(|n| !n.is_empty() && n.len() <= 255)
        .ok_or("Namespace is not a string of 1 to 255 characters")?;
    let sets = directive["Dimensions"]
        .as_array()
        .ok_or("Dimensions is not an array")?;
    let mut dimensions = BTreeMap::new();
    for set in sets {
        let names = set.as_array().ok_or("a dimension set is not an array")?;
        if names.len() > 30 {
            return Err("a dimension set has more than 30 names".into());
        }
        for name in names {
            let name = name.as_str().ok_or("a dimension name is not a string")?;
            let value = root
                .get(name)
                .and_then(Value::as_str)
                .ok_or(format!("dimension {name} is not a string member"))?;
            dimensions.insert(name.to_string(), value.to_string());
        }
    }
    let definitions = directive["Metrics"]
        .as_array()
        .ok_or("Metrics is not an array")?;
    if definitions.len() > 100 {
        return Err("more than 100 metric definitions".into());
    }
    let mut metrics = BTreeMap::new();
    for definition in definitions {
        let name = definition["Name"]
            .as_str()
            .filter(|n| !n.is_empty())
            .ok_or("a metric definition has no Name")?;
        let unit = match definition.get("Unit") {
            None => None,
            Some(u) => {
                let u = u.as_str().ok_or(format!("{name}: Unit is not a string"))?;
                if !UNITS.contains(&u) {
                    return Err(format!("{name}: {u} is not a CloudWatch unit"));
                }
                Some(u.to_string())
            }
        };
        let values = match root.get(name) {
            Some(Value::Number(n)) => vec![n.as_f64().expect("a JSON number")],
            Some(Value::Array(a)) if !a.is_empty() && a.len() <= 100 => a
                .iter()
                .map(|v| v.as_f64().ok_or(format!("{name}: a value is not a number")))
                .collect::<Result<_, _>>()?,
            _ => return Err(format!("{name} has no number or array of 1 to 100 numbers")),
        };
        metrics.insert(name.to_string(), (values, unit));
    }
    Ok(Document {
        namespace: namespace.to_string(),
        dimensions,
        metrics,
        line,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn now() -> u64 {
        authz_core::clock::now_millis()
    }

    fn good() -> Value {
        json!({
            "_aws": {"Timestamp": now(), "CloudWatchMetrics": [{
                "Namespace": "Authz",
                "Dimensions": [["Function", "Outcome"]],
                "Metrics": [{"Name": "Decisions", "Unit": "Count"}, {"Name": "Latency", "Unit": "Microseconds"}]
            }]},
            "Function": "authorizer", "Outcome": "allow", "Decisions": 1, "Latency": [12.0, 30.0]
        })
    }

    #[test]
    fn a_good_line_is_read() {
        let d = check(good()).unwrap();
        assert_eq!(d.namespace, "Authz");
        assert_eq!(d.dimensions["Outcome"], "allow");
        assert_eq!(d.value("Decisions"), Some(1.0));
        assert_eq!(d.metrics["Latency"].0, vec![12.0, 30.0]);
        assert_eq!(d.unit("Latency"), Some("Microseconds"));
    }

    #[test]
    fn each_rule_is_checked() {
        let broken = |f: &dyn Fn(&mut Value)| {
            let mut v = good();
            f(&mut v);
            check(v).unwrap_err()
        };
        assert!(broken(&|v| v["_aws"]["Timestamp"] = json!(now() / 1000)).contains("Timestamp"));
        assert!(broken(&|v| v["Outcome"] = json!(1)).contains("dimension Outcome"));
        assert!(broken(&|v| v
            .as_object_mut()
            .unwrap()
            .remove("Decisions")
            .map(drop)
            .unwrap())
        .contains("Decisions"));
        assert!(broken(&|v| v["Latency"] = json!([])).contains("Latency"));
        assert!(broken(
            &|v| v["_aws"]["CloudWatchMetrics"][0]["Metrics"][0]["Unit"] = json!("Things")
        )
        .contains("not a CloudWatch unit"));
        assert!(
            broken(&|v| v["_aws"]["CloudWatchMetrics"][0]["Namespace"] = json!(""))
                .contains("Namespace")
        );
    }
}
