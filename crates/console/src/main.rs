//! `console`: serves the admin console and its configuration from the API
//! (the `GET /console` and `GET /console/{proxy+}` routes).

use lambda_http::{service_fn, Error, Request, RequestExt};

#[tokio::main]
async fn main() -> Result<(), Error> {
    let config: &'static console::Config =
        Box::leak(Box::new(console::Config::from_lookup(|name| {
            std::env::var(name).ok()
        })));
    lambda_http::run(service_fn(move |request: Request| async move {
        let file = request
            .path_parameters_ref()
            .and_then(|p| p.first("proxy"))
            .map(str::to_string);
        // The path the browser used (with the stage), for the redirect to
        // the console's directory.
        let public_path = match request.request_context_ref() {
            Some(lambda_http::request::RequestContext::ApiGatewayV1(ctx)) => ctx.path.clone(),
            _ => None,
        }
        .unwrap_or_else(|| request.uri().path().to_string());
        Ok::<_, Error>(console::respond(file.as_deref(), &public_path, config))
    }))
    .await
}
