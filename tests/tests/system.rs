//! The whole-system tests, one module a file, in one binary (one link of
//! the whole system, not seven): the template's table, API, alarms and
//! stream mappings checked as written, and the tests that start the local
//! stack (`console`, `contract`, `local_stack`), which `make test` runs
//! on their own, each on a DynamoDB Local of its own.

mod alarms;
mod console;
mod contract;
mod local_stack;
mod recompute_mapping;
mod table;
mod template;
