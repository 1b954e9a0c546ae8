//! Who writes, and the ceiling on what they may confer: a write that gives
//! permissions (a grant's roles, a user's global roles, a role's
//! permissions) is allowed only if the caller holds, in the scope of the
//! write, every permission it adds. Removing is never limited.

use crate::error::{Error, Result};
use crate::values::{any_grants, Permission};

/// What a caller may confer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ceiling {
    /// Anything: the operator's own tools (`make bootstrap`, tests' set-up),
    /// which run with the table's credentials and no caller to check.
    Unlimited,
    /// What these permissions cover (`*` everything, `ticket:*` every
    /// `ticket:` permission and `ticket:*` itself).
    Holds(Vec<Permission>),
}

/// The caller of a write: recorded as `updatedBy`, limited by its ceiling.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    pub id: Option<String>,
    pub ceiling: Ceiling,
}

impl Caller {
    /// The operator's tools: no caller id, no ceiling.
    pub const OPERATOR: Caller = Caller {
        id: None,
        ceiling: Ceiling::Unlimited,
    };

    /// The operator's tools, recording `id` as `updatedBy`.
    pub fn operator(id: impl Into<String>) -> Self {
        Self {
            id: Some(id.into()),
            ceiling: Ceiling::Unlimited,
        }
    }

    /// A caller who holds `permissions` in the scope of the write.
    pub fn holding(id: impl Into<String>, permissions: Vec<Permission>) -> Self {
        Self {
            id: Some(id.into()),
            ceiling: Ceiling::Holds(permissions),
        }
    }

    pub fn id(&self) -> Option<&str> {
        self.id.as_deref()
    }

    /// `Forbidden` naming the first of `conferred` the caller does not hold.
    pub fn may_confer<'a>(
        &self,
        conferred: impl IntoIterator<Item = &'a Permission>,
    ) -> Result<()> {
        let Ceiling::Holds(held) = &self.ceiling else {
            return Ok(());
        };
        match conferred
            .into_iter()
            .find(|p| !any_grants(held, p.as_str()))
        {
            Some(missing) => Err(Error::Forbidden {
                permission: missing.to_string(),
            }),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn perms(list: &[&str]) -> Vec<Permission> {
        list.iter().map(|p| Permission::parse(p).unwrap()).collect()
    }

    fn refused(caller: &Caller, conferred: &[&str]) -> Option<String> {
        match caller.may_confer(&perms(conferred)) {
            Ok(()) => None,
            Err(Error::Forbidden { permission }) => Some(permission),
            Err(e) => panic!("{e}"),
        }
    }

    #[test]
    fn a_caller_confers_only_what_it_holds() {
        let admin = Caller::holding("u", perms(&["member:write", "ticket:*"]));
        assert_eq!(refused(&admin, &["ticket:read", "ticket:*"]), None);
        assert_eq!(refused(&admin, &["member:write"]), None);
        assert_eq!(
            refused(&admin, &["ticket:read", "tenant:delete"]),
            Some("tenant:delete".into())
        );
        assert_eq!(refused(&admin, &["*"]), Some("*".into()));
        assert_eq!(refused(&admin, &["member:*"]), Some("member:*".into()));
        let nobody = Caller::holding("u", vec![]);
        assert_eq!(refused(&nobody, &[]), None);
        assert_eq!(
            refused(&nobody, &["ticket:read"]),
            Some("ticket:read".into())
        );
        let platform = Caller::holding("u", perms(&["*"]));
        assert_eq!(refused(&platform, &["*", "tenant:delete"]), None);
        assert_eq!(refused(&Caller::OPERATOR, &["*"]), None);
    }
}
