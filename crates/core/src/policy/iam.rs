//! IAM's wildcard matching, as API Gateway applies it to the `execute-api`
//! ARNs of an authorizer's policy and IAM to the resources and actions of
//! any policy: `*` is any run of characters (also `/` and `:`), `?` one
//! character. One implementation for the authorizer's policies and the test
//! harness's IAM check; the local gateway evaluates the authorizer's
//! policies with its own (devtools `gateway::iam`), so that a bug here
//! cannot pass on both sides.

/// IAM's wildcard match for resources: `*` any run of characters (also
/// `/`), `?` one character. Allocation-free for ASCII (every ARN API Gateway
/// builds); other text is compared character by character.
pub fn arn_matches(pattern: &str, arn: &str) -> bool {
    if pattern.is_ascii() && arn.is_ascii() {
        wildcard(pattern.as_bytes(), arn.as_bytes())
    } else {
        let p: Vec<char> = pattern.chars().collect();
        let s: Vec<char> = arn.chars().collect();
        wildcard(&p, &s)
    }
}

/// Greedy wildcard matching with backtracking to the last `*`.
fn wildcard<T: Copy + PartialEq + From<u8>>(p: &[T], s: &[T]) -> bool {
    let (star_sym, any_sym) = (T::from(b'*'), T::from(b'?'));
    let (mut pi, mut si) = (0, 0);
    let (mut star, mut mark) = (None, 0);
    while si < s.len() {
        if pi < p.len() && (p[pi] == any_sym || p[pi] == s[si]) {
            pi += 1;
            si += 1;
        } else if pi < p.len() && p[pi] == star_sym {
            star = Some(pi);
            mark = si;
            pi += 1;
        } else if let Some(st) = star {
            pi = st + 1;
            mark += 1;
            si = mark;
        } else {
            return false;
        }
    }
    while pi < p.len() && p[pi] == star_sym {
        pi += 1;
    }
    pi == p.len()
}

/// IAM's match for actions (`dynamodb:Get*`): the same wildcards, ASCII
/// case-insensitive (`dynamodb:getitem` is `dynamodb:GetItem`).
pub fn action_matches(pattern: &str, action: &str) -> bool {
    arn_matches(&pattern.to_ascii_lowercase(), &action.to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcards_span_separators_and_actions_ignore_case() {
        assert!(arn_matches(
            "arn:aws:dynamodb:r:1:table/t/index/*",
            "arn:aws:dynamodb:r:1:table/t/index/GSI1"
        ));
        assert!(!arn_matches(
            "arn:aws:dynamodb:r:1:table/t",
            "arn:aws:dynamodb:r:1:table/t/index/GSI1"
        ));
        assert!(arn_matches(
            "arn:*:table/t?",
            "arn:aws:dynamodb:r:1:table/t2"
        ));
        assert!(!arn_matches(
            "arn:*:table/t?",
            "arn:aws:dynamodb:r:1:table/t"
        ));
        assert!(action_matches("dynamodb:Get*", "dynamodb:GetItem"));
        assert!(action_matches("DynamoDB:getitem", "dynamodb:GetItem"));
        assert!(!action_matches("dynamodb:GetItem", "dynamodb:BatchGetItem"));
    }
}
