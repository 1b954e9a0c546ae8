//! What the table holds: validated values (ids, names, emails,
//! permissions), the one place keys are built and parsed, the item types by
//! entity, the validated inputs of writes, and DynamoDB's size rules. Uses
//! nothing of the crate but `error`.

pub mod input;
pub mod items;
pub mod keys;
pub mod size;
pub mod values;
