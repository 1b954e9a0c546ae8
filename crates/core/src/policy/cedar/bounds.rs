//! How deep a Cedar statement may be, checked on its text before Cedar's
//! parser sees it. Cedar's parser, validator and evaluator recurse once per
//! level of an expression and have no depth check of their own, so a
//! statement nested a few thousand levels deep (well under the 10,000
//! characters a statement may have) overflows a thread's stack and aborts
//! the process. Provisioning refuses such a statement (400 `statement`) and
//! the authorizer never parses one it finds in the table.
//!
//! The measure is an upper bound on the depth of the statement's syntax
//! tree, found without parsing: along any path into the text, each open
//! bracket (`(`, `[`, `{`) adds [`BRACKET_COST`] and each operator token
//! of the bracket levels it is in adds 1 (a chain of `||`, `.`, `==` or `!`
//! nests as deep as it is long). A bracket costs more because each one
//! passes through every precedence level of Cedar's grammar. Measured on a
//! 2 MiB stack (a Tokio worker's), the parser overflowed in a debug build
//! at 37 nested brackets or a chain of 151 operators, in a release build at
//! 118 and 1,692; the bound, [`MAX_DEPTH`], stays under half of the debug
//! figures, and `statement_bounds` in the tests runs statements at the bound
//! through the check and a decision on such a stack.

/// The most a statement's depth may be.
pub const MAX_DEPTH: usize = 64;
/// What one level of brackets adds to the depth.
pub const BRACKET_COST: usize = 4;

/// A statement deeper than the bound: where it got too deep (a byte
/// offset into the text) and how deep it is there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TooDeep {
    pub offset: usize,
    pub depth: usize,
}

impl std::fmt::Display for TooDeep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the statement nests too deeply ({} or more levels, at most {MAX_DEPTH}: each \
             bracket counts {BRACKET_COST} and each operator 1); split the condition into \
             several policies or use a set with `.contains`",
            self.depth
        )
    }
}

/// Operator keywords: each nests one level like a symbol does.
const KEYWORDS: [&str; 7] = ["in", "has", "like", "is", "if", "then", "else"];

/// Checks the depth bound on `text` (see the module's header). String
/// literals and `//` comments are skipped; an unterminated string ends
/// the scan (Cedar's parser then refuses it without recursing).
pub fn check(text: &str) -> Result<(), TooDeep> {
    let bytes = text.as_bytes();
    // The operators seen so far at each open bracket level, the top level
    // first: a path into the text passes through all of them.
    let mut levels: Vec<usize> = vec![0];
    let mut depth = 0usize;
    let mut i = 0;
    let bump = |levels: &mut Vec<usize>, depth: &mut usize, cost: usize, at: usize| {
        *depth += cost;
        if let Some(last) = levels.last_mut() {
            *last += cost;
        }
        if *depth > MAX_DEPTH {
            Err(TooDeep {
                offset: at,
                depth: *depth,
            })
        } else {
            Ok(())
        }
    };
    while i < bytes.len() {
        let b = bytes[i];
        match b {
            b'"' => {
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
            }
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
            }
            b'(' | b'[' | b'{' => {
                levels.push(0);
                bump(&mut levels, &mut depth, BRACKET_COST, i)?;
                // The bracket's own cost belongs to the level it opens.
            }
            b')' | b']' | b'}' if levels.len() > 1 => {
                let inner = levels.pop().unwrap_or(0);
                depth = depth.saturating_sub(inner);
            }
            b'|' | b'&' | b'=' | b'!' | b'<' | b'>' | b'+' | b'-' | b'*' | b'.' => {
                // A two-character operator (`||`, `==`, `<=`, `!=`) is one.
                let pair = matches!(
                    (b, bytes.get(i + 1)),
                    (b'|', Some(b'|')) | (b'&', Some(b'&')) | (_, Some(b'='))
                );
                bump(&mut levels, &mut depth, 1, i)?;
                if pair {
                    i += 1;
                }
            }
            c if c.is_ascii_alphabetic() || c == b'_' => {
                let start = i;
                while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                    i += 1;
                }
                if KEYWORDS.contains(&&text[start..i]) {
                    bump(&mut levels, &mut depth, 1, start)?;
                }
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn when(body: &str) -> String {
        format!("forbid(principal, action, resource) when {{ {body} }};")
    }

    #[test]
    fn ordinary_statements_pass() {
        for statement in [
            r#"permit(principal in Role::"01J8Z0E2Z8D2A3J7A7Y2H9GQ9C", action in [Action::"member:read", Action::"member:write"], resource in Tenant::"01J8Z0E2Z8D2A3J7A7Y2H9GQ9D") when { context.sourceIp.isInRange(ip("10.0.0.0/8")) && context.time >= datetime("2026-01-01T00:00:00Z") } unless { principal.status == "suspended" || context.path like "/tenants/*/secrets/*" };"#,
            &when(&vec!["context.path == \"/a\""; 15].join(" || ")),
            &when(&format!("{}true{}", "(".repeat(12), ")".repeat(12))),
            // Brackets in strings and comments are not brackets.
            &when(&format!(
                "context.path == \"{}\" // {}\n",
                "(".repeat(500),
                "[".repeat(500)
            )),
        ] {
            assert_eq!(check(statement), Ok(()), "{statement}");
        }
    }

    #[test]
    fn deep_statements_are_refused_where_they_get_too_deep() {
        let nested = when(&format!("{}true{}", "(".repeat(4900), ")".repeat(4900)));
        let err = check(&nested).unwrap_err();
        assert!(err.depth > MAX_DEPTH);
        assert!(err.offset < 100, "{err:?}");
        for body in [
            vec!["true"; 70].join(" || "),
            format!("{}true", "!".repeat(70)),
            format!("{}1 == 1", "-".repeat(70)),
            format!("context{} == 1", ".a".repeat(70)),
            format!("{}1{} == 1", "[".repeat(20), "]".repeat(20)),
            format!("{}1{} == 1", "{a:".repeat(20), "}".repeat(20)),
            format!(
                "{}true{}",
                "if true then ".repeat(35),
                " else false".repeat(35)
            ),
            // Depth adds up across levels: a chain inside brackets inside a chain.
            format!(
                "{} || ({} || ({}))",
                vec!["true"; 20].join(" || "),
                vec!["true"; 20].join(" || "),
                vec!["true"; 20].join(" || ")
            ),
        ] {
            assert!(check(&when(&body)).is_err(), "{body}");
        }
    }

    #[test]
    fn closing_a_bracket_gives_its_depth_back() {
        // Groups one after another are as deep as one group plus the
        // chain that joins them.
        let groups = ["(context.path == \"/a\" || context.path == \"/b\")"; 12].join(" && ");
        assert_eq!(check(&when(&groups)), Ok(()));
        let groups = vec!["(context.path == \"/a\" || context.path == \"/b\")"; 60].join(" && ");
        assert!(check(&when(&groups)).is_err(), "60 && in a row");
        // A long list is a set, as wide as it likes.
        let set = format!(
            "[{}].contains(context.path)",
            vec!["\"/a\""; 400].join(", ")
        );
        assert_eq!(check(&when(&set)), Ok(()));
    }
}
