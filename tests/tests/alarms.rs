//! The alarms and the dashboard of `template.yaml`: each alarm watches the
//! resource and the metric it is named for, notifies the stack's topic when
//! it fires and when it clears, and points at its section of the runbook;
//! the functions' own metrics that the alarms and the dashboard read are
//! the ones the functions write (`authz_core::runtime::metrics`), in the namespace
//! the functions are given.

use std::collections::BTreeSet;

use authz_core::runtime::metrics::{dimension, name, outcome, UNITS};
use serde_yaml::Value;

fn template() -> Value {
    testkit::template::read(&testkit::repo_root()).unwrap()
}

/// A YAML value as the template would write it (`!Ref X` and so on).
fn yaml(text: &str) -> Value {
    serde_yaml::from_str(text).unwrap()
}

fn alarms(t: &Value) -> Vec<(String, &Value)> {
    t["Resources"]
        .as_mapping()
        .unwrap()
        .iter()
        .filter(|(_, r)| r["Type"].as_str() == Some("AWS::CloudWatch::Alarm"))
        .map(|(id, r)| (id.as_str().unwrap().to_string(), &r["Properties"]))
        .collect()
}

fn alarm<'a>(t: &'a Value, id: &str) -> &'a Value {
    let resource = &t["Resources"][id];
    assert_eq!(
        resource["Type"].as_str(),
        Some("AWS::CloudWatch::Alarm"),
        "{id}"
    );
    &resource["Properties"]
}

/// `[Name, Value]` pairs of a `Dimensions` list.
fn dimensions(list: &Value) -> Vec<(Value, Value)> {
    list.as_sequence()
        .unwrap()
        .iter()
        .map(|d| (d["Name"].clone(), d["Value"].clone()))
        .collect()
}

/// The namespace the template gives the functions for their metrics.
fn metrics_namespace(t: &Value) -> &Value {
    &t["Globals"]["Function"]["Environment"]["Variables"]
        [authz_core::runtime::metrics::NAMESPACE_VAR]
}

/// GitHub's anchor for a Markdown heading.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

#[test]
fn every_alarm_notifies_the_topic_and_has_a_runbook_section() {
    let t = template();
    let found: BTreeSet<String> = alarms(&t).into_iter().map(|(id, _)| id).collect();
    let expected: BTreeSet<String> = [
        "RecomputeDeadLettersAlarm",
        "RecomputeStreamLagAlarm",
        "AuthorizerErrorsAlarm",
        "PolicySetRejectedAlarm",
        "RevocationsUnrecordedAlarm",
        "AuthorizerCacheFlushFailuresAlarm",
        "ApiServerErrorsAlarm",
        "TableThrottlesAlarm",
    ]
    .map(String::from)
    .into();
    assert_eq!(found, expected);

    let runbook = std::fs::read_to_string(testkit::repo_root().join("docs/runbook.md")).unwrap();
    let sections: BTreeSet<String> = runbook
        .lines()
        .filter_map(|l| l.strip_prefix("## "))
        .map(anchor)
        .collect();
    for (id, alarm) in alarms(&t) {
        let topic = yaml("[!Ref AlarmTopic]");
        assert_eq!(alarm["AlarmActions"], topic, "{id} notifies when it fires");
        assert_eq!(alarm["OKActions"], topic, "{id} notifies when it clears");
        let description = alarm["AlarmDescription"].as_str().unwrap();
        let section = description
            .split("docs/runbook.md#")
            .nth(1)
            .and_then(|rest| rest.split(')').next())
            .unwrap_or_else(|| panic!("{id}: no runbook link in {description:?}"));
        assert!(
            sections.contains(section),
            "{id}: docs/runbook.md has no section #{section} ({sections:?})"
        );
        assert_eq!(
            alarm["TreatMissingData"].as_str(),
            Some("notBreaching"),
            "{id}"
        );
        assert_eq!(
            alarm["ComparisonOperator"].as_str(),
            Some("GreaterThanThreshold"),
            "{id}"
        );
    }

    let subscription = &t["Resources"]["AlarmEmailSubscription"];
    assert_eq!(subscription["Condition"].as_str(), Some("HasAlarmEmail"));
    assert_eq!(
        subscription["Properties"]["TopicArn"],
        yaml("!Ref AlarmTopic")
    );
    assert_eq!(
        subscription["Properties"]["Endpoint"],
        yaml("!Ref AlarmEmail")
    );
    assert_eq!(t["Parameters"]["AlarmEmail"]["Default"].as_str(), Some(""));
}

#[test]
fn each_alarm_watches_its_resource_and_metric() {
    let t = template();
    let single = |id: &str, namespace: Value, metric: &str, dims: &str, statistic: &str| {
        let a = alarm(&t, id);
        assert_eq!(a["Namespace"], namespace, "{id}");
        assert_eq!(a["MetricName"].as_str(), Some(metric), "{id}");
        let expected: Vec<(Value, Value)> = dimensions(&yaml(dims));
        assert_eq!(dimensions(&a["Dimensions"]), expected, "{id}");
        assert_eq!(a["Statistic"].as_str(), Some(statistic), "{id}");
        a
    };

    let dead = single(
        "RecomputeDeadLettersAlarm",
        yaml("AWS/SQS"),
        "ApproximateNumberOfMessagesVisible",
        "[{Name: QueueName, Value: !GetAtt RecomputeDeadLetters.QueueName}]",
        "Maximum",
    );
    assert_eq!(dead["Threshold"].as_i64(), Some(0), "any visible message");
    // The queue is the one the stream's failed batches go to.
    assert_eq!(
        t["Resources"]["RecomputeFunction"]["Properties"]["Events"]["TableStream"]["Properties"]
            ["DestinationConfig"]["OnFailure"]["Destination"],
        yaml("!GetAtt RecomputeDeadLetters.Arn")
    );

    let lag = single(
        "RecomputeStreamLagAlarm",
        yaml("AWS/Lambda"),
        "IteratorAge",
        "[{Name: FunctionName, Value: !Ref RecomputeFunction}]",
        "Maximum",
    );
    assert_eq!(lag["Threshold"], yaml("!Ref StreamLagAlarmMilliseconds"));
    assert_eq!(
        t["Parameters"]["StreamLagAlarmMilliseconds"]["Default"].as_i64(),
        Some(5 * 60 * 1000),
        "five minutes by default"
    );

    // The authorizer's own metric, as `handler::record` writes it.
    let errors = single(
        "AuthorizerErrorsAlarm",
        metrics_namespace(&t).clone(),
        name::DECISIONS,
        &format!(
            "[{{Name: {}, Value: authorizer}}, {{Name: {}, Value: {}}}]",
            dimension::FUNCTION,
            dimension::OUTCOME,
            outcome::ERROR
        ),
        "Sum",
    );
    assert_eq!(errors["Threshold"].as_i64(), Some(0));
    assert_eq!(errors["Period"].as_i64(), Some(300), "over five minutes");

    // The policy set's own metric, as `PolicyCache` writes it.
    let rejected = single(
        "PolicySetRejectedAlarm",
        metrics_namespace(&t).clone(),
        name::REJECTED_STATEMENTS,
        &format!("[{{Name: {}, Value: authorizer}}]", dimension::FUNCTION),
        "Sum",
    );
    assert_eq!(rejected["Threshold"].as_i64(), Some(0));

    // The store's own metric, as `Store::record_revocations` writes it in
    // each function that records revocations: provisioning (its writes')
    // and recompute (a role's deletion or narrowing, a directory group's
    // change it settles), summed.
    let unrecorded = alarm(&t, "RevocationsUnrecordedAlarm");
    assert_eq!(unrecorded["Threshold"].as_i64(), Some(0));
    let queries = unrecorded["Metrics"].as_sequence().unwrap();
    let mut functions = BTreeSet::new();
    let mut ids = Vec::new();
    for q in queries.iter().filter(|q| q.get("MetricStat").is_some()) {
        assert_eq!(q["ReturnData"].as_bool(), Some(false));
        let metric = &q["MetricStat"]["Metric"];
        assert_eq!(&metric["Namespace"], metrics_namespace(&t));
        assert_eq!(
            metric["MetricName"].as_str(),
            Some(name::REVOCATIONS_UNRECORDED)
        );
        assert_eq!(q["MetricStat"]["Stat"].as_str(), Some("Sum"));
        let dims = dimensions(&metric["Dimensions"]);
        assert_eq!(dims.len(), 1);
        assert_eq!(dims[0].0.as_str(), Some(dimension::FUNCTION));
        functions.insert(dims[0].1.as_str().unwrap().to_string());
        ids.push(q["Id"].as_str().unwrap().to_string());
    }
    assert_eq!(
        functions,
        ["provisioning", "recompute"].map(String::from).into(),
        "every function that records revocations"
    );
    let sum = queries
        .iter()
        .find(|q| q["ReturnData"].as_bool() == Some(true))
        .expect("the alarm's expression");
    assert_eq!(
        sum["Expression"].as_str(),
        Some(format!("SUM([{}])", ids.join(", ")).as_str())
    );

    let api = single(
        "ApiServerErrorsAlarm",
        yaml("AWS/ApiGateway"),
        "5XXError",
        "[{Name: ApiName, Value: !Sub '${AWS::StackName}-api'}, {Name: Stage, Value: !Ref StageName}]",
        "Sum",
    );
    assert_eq!(api["Threshold"].as_i64(), Some(0));
    let rest_api = &t["Resources"]["AuthzApi"]["Properties"];
    assert_eq!(
        rest_api["Name"],
        yaml("!Sub '${AWS::StackName}-api'"),
        "the API's name is the alarm's ApiName"
    );
    assert_eq!(rest_api["StageName"], yaml("!Ref StageName"));

    // Reads and writes throttled on the table and on every index.
    let throttles = alarm(&t, "TableThrottlesAlarm");
    let queries = throttles["Metrics"].as_sequence().unwrap();
    let mut watched = BTreeSet::new();
    let mut ids = Vec::new();
    for q in queries.iter().filter(|q| q.get("MetricStat").is_some()) {
        assert_eq!(q["ReturnData"].as_bool(), Some(false));
        let metric = &q["MetricStat"]["Metric"];
        assert_eq!(metric["Namespace"].as_str(), Some("AWS/DynamoDB"));
        assert_eq!(q["MetricStat"]["Stat"].as_str(), Some("Sum"));
        let dims = dimensions(&metric["Dimensions"]);
        assert_eq!(dims[0], (yaml("TableName"), yaml("!Ref AuthzTable")));
        let index = dims.get(1).map(|(n, v)| {
            assert_eq!(n.as_str(), Some("GlobalSecondaryIndexName"));
            v.as_str().unwrap().to_string()
        });
        watched.insert((metric["MetricName"].as_str().unwrap().to_string(), index));
        ids.push(q["Id"].as_str().unwrap().to_string());
    }
    let table = testkit::template::table_definition(&t);
    let mut expected = BTreeSet::new();
    for metric in ["ReadThrottleEvents", "WriteThrottleEvents"] {
        expected.insert((metric.to_string(), None));
        for gsi in &table.gsis {
            expected.insert((metric.to_string(), Some(gsi.name.clone())));
        }
    }
    assert_eq!(watched, expected);
    let [sum] = queries
        .iter()
        .filter(|q| q.get("Expression").is_some())
        .collect::<Vec<_>>()[..]
    else {
        panic!("one expression")
    };
    assert_eq!(sum["ReturnData"].as_bool(), Some(true));
    assert_eq!(
        sum["Expression"].as_str().unwrap(),
        format!("SUM([{}])", ids.join(", ")),
        "the alarm sums every one of them"
    );
}

/// Replaces the template's `${...}` references in a `!Sub` string with
/// stand-ins, the way CloudFormation would with real values.
fn substituted(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let end = start + rest[start..].find('}').unwrap();
        out.push_str(match &rest[start + 2..end] {
            "AWS::StackName" => "stack",
            "AWS::Region" => "us-east-1",
            "StreamLagAlarmMilliseconds" => "300000",
            _ => "resource",
        });
        rest = &rest[end + 1..];
    }
    out + rest
}

#[test]
fn the_dashboard_reads_metrics_the_functions_write() {
    let t = template();
    let Value::Tagged(namespace) = metrics_namespace(&t) else {
        panic!("METRICS_NAMESPACE is a !Sub")
    };
    let namespace = substituted(namespace.value.as_str().unwrap());
    let Value::Tagged(body) = &t["Resources"]["Dashboard"]["Properties"]["DashboardBody"] else {
        panic!("the dashboard body is a !Sub")
    };
    let body: serde_json::Value =
        serde_json::from_str(&substituted(body.value.as_str().unwrap())).expect("JSON");
    let known: BTreeSet<&str> = UNITS.iter().map(|(n, _)| *n).collect();
    let dimension_names = [
        dimension::FUNCTION,
        dimension::OUTCOME,
        dimension::ROUTE,
        dimension::STATUS_CLASS,
    ];
    let mut shown = BTreeSet::new();
    for widget in body["widgets"].as_array().unwrap() {
        let properties = &widget["properties"];
        assert_eq!(properties["region"], "us-east-1");
        let mut previous: Vec<serde_json::Value> = Vec::new();
        for row in properties["metrics"].as_array().unwrap() {
            // A row is [namespace, name, dimension, value, ..., {options}];
            // "..." repeats the row before with its last items replaced.
            let items: Vec<serde_json::Value> = row
                .as_array()
                .unwrap()
                .iter()
                .filter(|i| i.is_string())
                .cloned()
                .collect();
            if items.is_empty() {
                continue; // an expression
            }
            let items = if items[0] == "..." {
                let replaced = items.len() - 1;
                let mut full = previous[..previous.len() - replaced].to_vec();
                full.extend_from_slice(&items[1..]);
                full
            } else {
                items
            };
            previous = items.clone();
            let text: Vec<&str> = items.iter().map(|i| i.as_str().unwrap()).collect();
            assert!(
                text.len().is_multiple_of(2),
                "namespace, name and dimension pairs: {text:?}"
            );
            shown.insert(text[1].to_string());
            if text[0] == namespace {
                assert!(
                    known.contains(text[1]),
                    "{} is not a metric the functions write",
                    text[1]
                );
                for pair in text[2..].chunks(2) {
                    assert!(dimension_names.contains(&pair[0]), "{pair:?}");
                }
            } else {
                assert!(text[0].starts_with("AWS/"), "{text:?}");
            }
        }
    }
    for needed in [
        name::DECISIONS,
        name::DECISION_LATENCY,
        name::TOKEN_CACHE_HITS,
        name::INPUT_CACHE_HITS,
        name::ANSWER_CACHE_HITS,
        "IteratorAge",
        name::FAN_OUT_HOLDERS,
    ] {
        assert!(shown.contains(needed), "the dashboard shows {needed}");
    }
}
