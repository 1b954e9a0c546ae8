//! A user's email addresses: add one (unverified, holding nothing), verify
//! it with a one-time code (or an admin's word), which takes its uniqueness
//! guard, make a verified one primary (the old primary off, the new one
//! on, the User's `email` changed, in one transaction), remove a
//! non-primary one with its guard when it holds it. An address's global
//! uniqueness begins when it is verified (or assigned by an administrator
//! as a user's `email`): an address someone added to themselves and never
//! proved blocks nobody and links nobody (`docs/identity.md`). The writes
//! that move the user's version yield to an administrator's revoking
//! write under way (`Store::fence_user`).

use std::time::Duration;

use rand::Rng;
use sha2::{Digest, Sha256};

use super::write::{actor_string, guard_not_held, Races};
use crate::clock::{now, now_seconds};
use crate::error::{Error, Resource, Result};
use crate::model::items::{
    EmailAddress, EmailOfUser, Entity, Stamp, User, UserEmailGuard, UserLookup,
};
use crate::model::keys;
use crate::model::values::{Email, EmailId, Invalid, UserId};
use crate::policy::ceiling::Caller;
use crate::store::history::HistoryOf;
use crate::store::page::{ListScope, PageRequest, MAX_LIMIT};
use crate::store::txn::{fenced, fenced_out, Transaction};
use crate::store::Store;

/// Most addresses one user may have (the primary included).
pub const EMAILS_PER_USER_MAX: usize = 10;

/// How long a verification code stays valid.
pub const VERIFICATION_CODE_TTL: Duration = Duration::from_secs(24 * 60 * 60);

/// Characters of a verification code: Crockford base32, 10 of them (50
/// bits), so guessing one within its day is out of reach without any
/// attempt counter.
const CODE_ALPHABET: &[u8] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";
const CODE_LEN: usize = 10;

/// A verification code, shown once to whoever added the address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerificationCode {
    pub code: String,
    /// Seconds since the epoch.
    pub expires_at: u64,
}

/// How an address is shown to belong to its user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Proof {
    /// The code sent to the address.
    Code(String),
    /// An admin (a caller holding `user:update`) vouches for it.
    Vouched,
}

fn hash(code: &str) -> String {
    Sha256::digest(code.trim().to_ascii_uppercase().as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn new_code() -> VerificationCode {
    let mut rng = rand::rng();
    let code = (0..CODE_LEN)
        .map(|_| CODE_ALPHABET[rng.random_range(0..CODE_ALPHABET.len())] as char)
        .collect();
    VerificationCode {
        code,
        expires_at: now_seconds() + VERIFICATION_CODE_TTL.as_secs(),
    }
}

/// Moves `user`'s version in `txn`, conditioned on the version read: the
/// user is still there, not being deleted (its delete releases every
/// address it reads, and sweeps any added meanwhile), with the addresses
/// the change counted or found, and not fenced by an administrator's
/// revoking write. Answers the version it produces.
fn touch(txn: &mut Transaction, user: &User) -> Result<u64> {
    txn.yielding_to_admins(&user.key()).update(
        &user.key(),
        &user.incarnation(),
        [],
        user.stamp.version,
        Resource::User,
    )?;
    Ok(user.stamp.version + 1)
}

fn email_not_found() -> Error {
    Error::not_found(Resource::Email)
}

impl Store {
    /// A user's email addresses (consistent Query of the user's partition).
    pub async fn user_emails(&self, user_id: &UserId) -> Result<Vec<EmailAddress>> {
        let partition = keys::user_partition(user_id);
        let scope = ListScope {
            index: None,
            partition: &partition,
            sort_prefix: Some(keys::email_addresses_prefix()),
        };
        let page = self
            .query::<EmailAddress>(scope, &PageRequest::with_limit(MAX_LIMIT))
            .await?;
        Ok(page.items)
    }

    /// The live user (consistent read) a change of their own addresses
    /// starts from, refused at once while an administrator's revoking
    /// write has them fenced: such a change would fail on the fence in its
    /// transaction anyway, and sending it would only hold the user item
    /// the administrator's transaction needs.
    async fn unfenced_user(&self, user_id: &UserId) -> Result<User> {
        let item = self.get_item(&keys::user(user_id), true).await?;
        if fenced(item.as_ref(), crate::clock::now_millis()) {
            return Err(fenced_out());
        }
        super::users::live(item.map(User::from_item).transpose()?)
    }

    async fn email_address(&self, user_id: &UserId, id: &EmailId) -> Result<EmailAddress> {
        self.get::<EmailAddress>(&keys::email_address(user_id, id), true)
            .await?
            .ok_or_else(email_not_found)
    }

    /// Adds an address to a live user, unverified and not primary, in one
    /// transaction: `Conflict { email }` if this user has it already, or if
    /// it is held (verified, or assigned as a user's `email`) by anyone.
    /// It takes no guard: an address nobody has proved blocks nobody; it
    /// takes the guard when it is verified. Answers the record and its
    /// one-time code.
    ///
    /// The user's version moves with it (so does a removal's), and the
    /// transaction is conditioned on the version at which the addresses
    /// were counted and compared: concurrent adds cannot pass the bound,
    /// nor add one address twice, together.
    pub async fn add_email(
        &self,
        user_id: &UserId,
        email: &Email,
    ) -> Result<(EmailAddress, VerificationCode)> {
        let mut races = Races::of("user");
        loop {
            let user = self.unfenced_user(user_id).await?;
            let addresses = self.user_emails(user_id).await?;
            if addresses.iter().any(|a| a.email == *email) {
                return Err(Error::conflict("email"));
            }
            if addresses.len() >= EMAILS_PER_USER_MAX {
                return Err(Error::StateConflict {
                    field: "email".into(),
                    reason: format!(
                        "a user has at most {EMAILS_PER_USER_MAX} addresses: remove one first"
                    ),
                });
            }
            let code = new_code();
            let at = now();
            let record = EmailAddress {
                email_id: EmailId::generate(),
                user_id: *user_id,
                email: email.clone(),
                is_primary: false,
                is_verified: false,
                verified_at: None,
                code_hash: Some(hash(&code.code)),
                code_expires_at: Some(code.expires_at),
                stamp: Stamp::new(&at),
            };
            let mut txn = self.transaction();
            let version = touch(&mut txn, &user)?;
            txn.create(&record, "emailId")?
                .require_free(&keys::user_email_guard(email), "email")?
                .record_change(
                    HistoryOf::User(*user_id),
                    None,
                    Some(&record),
                    Some(version),
                )?;
            match txn.execute(self).await {
                Ok(()) => return Ok((record, code)),
                Err(
                    e @ Error::PreconditionFailed {
                        resource: Resource::User,
                    },
                ) => races.lost(e)?,
                Err(e) => return Err(e),
            }
        }
    }

    /// Who holds an address's guard, if anyone (consistent read).
    pub async fn email_holder(&self, email: &Email) -> Result<Option<UserId>> {
        Ok(self
            .get::<UserEmailGuard>(&keys::user_email_guard(email), true)
            .await?
            .map(|g| g.held.user_id))
    }

    /// A new code for an unverified address (the previous one stops
    /// working).
    pub async fn issue_email_code(
        &self,
        user_id: &UserId,
        id: &EmailId,
    ) -> Result<(EmailAddress, VerificationCode)> {
        let record = self.email_address(user_id, id).await?;
        if record.is_verified {
            return Err(Error::state_conflict(
                "isVerified",
                "the address is verified already",
            ));
        }
        let code = new_code();
        let next = EmailAddress {
            code_hash: Some(hash(&code.code)),
            code_expires_at: Some(code.expires_at),
            stamp: record.stamp.next(&now()),
            ..record.clone()
        };
        let mut txn = self.transaction();
        txn.replace(&next, record.stamp.version, Resource::Email)?;
        txn.execute(self).await?;
        Ok((next, code))
    }

    /// Marks an address verified, by its code or an admin's word (the
    /// admin is `caller`: `Forbidden` unless they may give what the
    /// invitations pending for it offer). Verifying a verified address
    /// changes nothing.
    pub async fn verify_email(
        &self,
        user_id: &UserId,
        id: &EmailId,
        proof: &Proof,
        caller: &Caller,
    ) -> Result<EmailAddress> {
        let record = self.email_address(user_id, id).await?;
        if record.is_verified {
            return Ok(record);
        }
        // Vouched for, the address lets its holder accept the invitations
        // pending for it: the caller must be able to give what they offer.
        if *proof == Proof::Vouched {
            self.may_give_invitations_to(&record.email, caller).await?;
        }
        if let Proof::Code(code) = proof {
            let bad = |reason: &str| Error::from(Invalid::new("code", reason));
            let (Some(expected), Some(expires_at)) = (&record.code_hash, record.code_expires_at)
            else {
                return Err(bad(
                    "no code is pending for this address: ask for a new one",
                ));
            };
            if now_seconds() >= expires_at {
                return Err(bad("has expired: ask for a new one"));
            }
            if hash(code) != *expected {
                return Err(bad("is not the code sent for this address"));
            }
        }
        // Verified, the address is this user's alone: it takes its guard
        // (unless this user holds it, as a primary address assigned by an
        // administrator does); someone who proved it first has it (409).
        let takes_guard = match self.email_holder(&record.email).await? {
            Some(holder) if holder == *user_id => false,
            Some(_) => return Err(Error::conflict("email")),
            None => true,
        };
        let at = now();
        let next = EmailAddress {
            is_verified: true,
            verified_at: Some(at.clone()),
            code_hash: None,
            code_expires_at: None,
            stamp: record.stamp.next(&at),
            ..record.clone()
        };
        // Conditioned on the version read: a code replaced meanwhile, or
        // a second verification, finds it changed (412); and on the user
        // still being there (a user being deleted has released its guards).
        let mut txn = self.transaction();
        txn.replace(&next, record.stamp.version, Resource::Email)?
            .require_live(&keys::user(user_id), Resource::User)?;
        if takes_guard {
            txn.create(
                &UserEmailGuard::new(
                    EmailOfUser {
                        email: record.email.clone(),
                        user_id: *user_id,
                    },
                    &at,
                ),
                "email",
            )?;
        }
        txn.record_change(HistoryOf::User(*user_id), Some(&record), Some(&next), None)?;
        txn.execute(self).await?;
        Ok(next)
    }

    /// Makes a verified address the primary one, in one transaction: the old
    /// primary off (its guard released if it was never verified), the new
    /// one on (both at the version read), the User's
    /// `email` and list entry changed at `expected_version` (the version
    /// read when None). `StateConflict { isVerified }` for an unverified
    /// address, `PreconditionFailed` if any of them changed meanwhile.
    pub async fn set_primary_email(
        &self,
        user_id: &UserId,
        id: &EmailId,
        expected_version: Option<u64>,
        actor: Option<&str>,
    ) -> Result<User> {
        let user = self.unfenced_user(user_id).await?;
        let version = expected_version.unwrap_or(user.stamp.version);
        if user.stamp.version != version {
            return Err(Error::PreconditionFailed {
                resource: Resource::User,
            });
        }
        let records = self.user_emails(user_id).await?;
        let chosen = records
            .iter()
            .find(|r| r.email_id == *id)
            .ok_or_else(email_not_found)?;
        if chosen.is_primary {
            return Ok(user);
        }
        if !chosen.is_verified {
            return Err(Error::state_conflict(
                "isVerified",
                "only a verified address can be primary: verify it first",
            ));
        }
        let at = now();
        let next_user = User {
            email: chosen.email.clone(),
            stamp: user.stamp.next(&at),
            updated_by: actor_string(actor),
            ..user.clone()
        };
        let mut txn = self.transaction();
        txn.yielding_to_admins(&next_user.key());
        for old in records.iter().filter(|r| r.is_primary) {
            txn.replace(
                &EmailAddress {
                    is_primary: false,
                    stamp: old.stamp.next(&at),
                    ..old.clone()
                },
                old.stamp.version,
                Resource::Email,
            )?;
            // It held its guard as the primary address; unverified, it
            // holds none now.
            if !old.is_verified {
                txn.delete_owned(
                    &keys::user_email_guard(&old.email),
                    "userId",
                    &user_id.to_string(),
                    guard_not_held(),
                )?;
            }
        }
        txn.replace(
            &EmailAddress {
                is_primary: true,
                stamp: chosen.stamp.next(&at),
                ..chosen.clone()
            },
            chosen.stamp.version,
            Resource::Email,
        )?
        .replace(&next_user, version, Resource::User)?
        .put(&UserLookup::of(&next_user))?
        .record_change(
            HistoryOf::User(*user_id),
            Some(&user),
            Some(&next_user),
            Some(next_user.stamp.version),
        )?;
        txn.execute(self).await?;
        Ok(next_user)
    }

    /// Removes a non-primary address and releases its guard (if it holds
    /// one) in one transaction, moving the user's version (see `add_email`);
    /// `StateConflict { isPrimary }` for the primary one.
    pub async fn remove_email(&self, user_id: &UserId, id: &EmailId) -> Result<()> {
        let mut races = Races::of("user");
        loop {
            let user = self.unfenced_user(user_id).await?;
            let record = self.email_address(user_id, id).await?;
            if record.is_primary {
                return Err(Error::state_conflict(
                    "isPrimary",
                    "the primary address cannot be removed: make another one primary first",
                ));
            }
            // Its guard, if it holds one (verified, or from before
            // unverified addresses held none).
            let holds_guard = self.email_holder(&record.email).await? == Some(*user_id);
            let mut txn = self.transaction();
            let version = touch(&mut txn, &user)?;
            txn.delete_current(&record, Resource::Email)?;
            if holds_guard {
                txn.delete_owned(
                    &keys::user_email_guard(&record.email),
                    "userId",
                    &user_id.to_string(),
                    guard_not_held(),
                )?;
            }
            txn.record_change(
                HistoryOf::User(*user_id),
                Some(&record),
                None,
                Some(version),
            )?;
            match txn.execute(self).await {
                Ok(()) => return Ok(()),
                Err(
                    e @ Error::PreconditionFailed {
                        resource: Resource::User,
                    },
                ) => races.lost(e)?,
                Err(e) => return Err(e),
            }
        }
    }
}
