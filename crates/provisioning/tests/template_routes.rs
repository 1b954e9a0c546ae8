//! Every route `template.yaml` sends to this function reaches one of its
//! handlers: no route is deployed into the router's 404 or 405 fallback.

use crate::common;

use common::*;
use serde_json::json;

#[tokio::test]
async fn every_template_route_reaches_a_handler() {
    let api = Api::new().await;
    let doc = testkit::template::read(&testkit::repo_root()).unwrap();
    let routes = testkit::template::api_definition(&doc).unwrap().routes;
    assert!(routes.len() >= 30, "{} routes", routes.len());
    // Any-method routes take what no operation does under a SCIM base
    // (`scim::unknown_paths_and_methods_answer_scim_errors`).
    for route in routes
        .iter()
        .filter(|r| r.function == "provisioning" && r.method != "ANY")
    {
        // Parameters filled with well-formed values: ids are ULIDs.
        let path: String = route
            .resource
            .split('/')
            .map(|segment| match segment {
                "{scope}" => "tenant",
                "{name}" => "acme",
                "{email}" => "nobody@example.com",
                s if s.starts_with('{') => "01J8YZZQ3V8PZKQ0ZKX4C2M7FM",
                s => s,
            })
            .collect::<Vec<_>>()
            .join("/");
        let method: &'static str = match route.method.as_str() {
            "GET" => "GET",
            "POST" => "POST",
            "PUT" => "PUT",
            "PATCH" => "PATCH",
            "DELETE" => "DELETE",
            other => panic!("unexpected method {other}"),
        };
        let mut call = Call::new(method, path.clone());
        if matches!(method, "POST" | "PUT" | "PATCH") {
            call = call.json(json!({}));
        }
        let reply = api.send(call).await;
        let fallback = reply.status == 405
            || (reply.status == 404 && reply.body["error"]["message"] == "no such route");
        assert!(
            !fallback,
            "{method} {path} ({}) fell through: {} {}",
            route.resource, reply.status, reply.body
        );
        assert!(
            reply.status < 500,
            "{method} {path}: {} {}",
            reply.status,
            reply.body
        );
    }
}
