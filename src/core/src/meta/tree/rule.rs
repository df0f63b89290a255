//! Tree rules: how one level of a tree extracts a name from a series. Stored in the tree's
//! row as `tree_rule:<level>:<order>` with Jackson's JSON of every field.

use crate::meta::json::esc;
use regex::Regex;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuleType {
    Metric,
    MetricCustom,
    Tagk,
    TagkCustom,
    TagvCustom,
}

impl RuleType {
    pub fn name(self) -> &'static str {
        match self {
            RuleType::Metric => "METRIC",
            RuleType::MetricCustom => "METRIC_CUSTOM",
            RuleType::Tagk => "TAGK",
            RuleType::TagkCustom => "TAGK_CUSTOM",
            RuleType::TagvCustom => "TAGV_CUSTOM",
        }
    }

    /// Case-insensitive, with OpenTSDB's messages.
    pub fn parse(s: &str) -> Result<RuleType, RuleError> {
        if s.is_empty() {
            return Err(RuleError::EmptyType);
        }
        Ok(match s.to_ascii_lowercase().as_str() {
            "metric" => RuleType::Metric,
            "metric_custom" => RuleType::MetricCustom,
            "tagk" => RuleType::Tagk,
            "tagk_custom" => RuleType::TagkCustom,
            "tagv_custom" => RuleType::TagvCustom,
            _ => return Err(RuleError::UnknownType),
        })
    }
}

/// A tree rule OpenTSDB would refuse, in its words.
#[derive(Debug, thiserror::Error)]
pub enum RuleError {
    #[error("Rule type was empty")]
    EmptyType,
    #[error("Unrecognized rule type")]
    UnknownType,
    /// A stored or posted rule that is not the rule JSON.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    #[error("Missing rule type")]
    MissingType,
    #[error("Missing field name required for {0} rule")]
    MissingField(&'static str),
    #[error("Missing custom field name required for {0} rule")]
    MissingCustomField(&'static str),
    #[error("Invalid regex group index. Cannot be less than 0")]
    GroupIndex,
    /// A regex or separator the `regex` crate refuses (Java-only constructs among them).
    #[error("Invalid regular expression {pattern:?}: {source}")]
    Regex {
        pattern: String,
        source: regex::Error,
    },
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct TreeRule {
    pub kind: Option<RuleType>,
    pub field: String,
    pub regex: String,
    pub separator: String,
    pub description: String,
    pub notes: String,
    pub level: i32,
    pub order: i32,
    pub tree_id: i32,
    pub custom_field: String,
    pub regex_group_idx: i32,
    pub display_format: String,
}

impl std::fmt::Display for TreeRule {
    /// `[<treeId>:<level>:<order>:<TYPE>]`, the form OpenTSDB's messages use.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "[{}:{}:{}:{}]",
            self.tree_id,
            self.level,
            self.order,
            self.kind.map(|k| k.name()).unwrap_or("null")
        )
    }
}

/// The column qualifier of a rule.
pub fn qualifier(level: i32, order: i32) -> Vec<u8> {
    format!("tree_rule:{level}:{order}").into_bytes()
}

pub const QUALIFIER_PREFIX: &[u8] = b"tree_rule:";

impl TreeRule {
    /// Storage and API JSON (the same): Jackson's getter order.
    pub fn to_json(&self) -> String {
        format!(
            "{{\"type\":{},\"field\":{},\"regex\":{},\"separator\":{},\"description\":{},\"notes\":{},\"level\":{},\"order\":{},\"treeId\":{},\"customField\":{},\"regexGroupIdx\":{},\"displayFormat\":{}}}",
            self.kind.map(|k| esc(k.name())).unwrap_or_else(|| "null".into()),
            esc(&self.field),
            esc(&self.regex),
            esc(&self.separator),
            esc(&self.description),
            esc(&self.notes),
            self.level,
            self.order,
            self.tree_id,
            esc(&self.custom_field),
            self.regex_group_idx,
            esc(&self.display_format)
        )
    }

    pub fn from_json(v: &[u8]) -> Result<TreeRule, RuleError> {
        let u: TreeRuleUpdate = serde_json::from_slice(v)?;
        let mut r = TreeRule::default();
        u.apply_to(&mut r)?;
        r.level = u.level.unwrap_or(0);
        r.order = u.order.unwrap_or(0);
        r.tree_id = u.tree_id.unwrap_or(0);
        Ok(r)
    }

    /// OpenTSDB's rule validation, with its messages.
    pub fn validate(&self) -> Result<(), RuleError> {
        let Some(kind) = self.kind else {
            return Err(RuleError::MissingType);
        };
        match kind {
            RuleType::Metric => {}
            RuleType::MetricCustom | RuleType::TagkCustom | RuleType::TagvCustom => {
                if self.field.is_empty() {
                    return Err(RuleError::MissingField(kind.name()));
                }
                if self.custom_field.is_empty() {
                    return Err(RuleError::MissingCustomField(kind.name()));
                }
            }
            RuleType::Tagk => {
                if self.field.is_empty() {
                    return Err(RuleError::MissingField(kind.name()));
                }
            }
        }
        if !self.regex.is_empty() && self.regex_group_idx < 0 {
            return Err(RuleError::GroupIndex);
        }
        self.compile()?;
        Ok(())
    }

    /// The regex and separator compiled with the `regex` crate. Java-only constructs
    /// (look-around, back-references, possessive quantifiers, `\Q…\E`) are rejected here.
    pub fn compile(&self) -> Result<(Option<Regex>, Option<Regex>), RuleError> {
        let c = |p: &str| -> Result<Option<Regex>, RuleError> {
            if p.is_empty() {
                return Ok(None);
            }
            Regex::new(p).map(Some).map_err(|source| RuleError::Regex {
                pattern: p.to_string(),
                source,
            })
        };
        Ok((c(&self.regex)?, c(&self.separator)?))
    }
}

/// What a rule POST/PUT carried; `None` = not set.
#[derive(Debug, Clone, Default, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TreeRuleUpdate {
    #[serde(default, rename = "type")]
    pub kind: Option<String>,
    #[serde(default)]
    pub field: Option<String>,
    #[serde(default)]
    pub regex: Option<String>,
    #[serde(default)]
    pub separator: Option<String>,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    pub notes: Option<String>,
    #[serde(default)]
    pub level: Option<i32>,
    #[serde(default)]
    pub order: Option<i32>,
    #[serde(default)]
    pub tree_id: Option<i32>,
    #[serde(default)]
    pub custom_field: Option<String>,
    #[serde(default)]
    pub regex_group_idx: Option<i32>,
    #[serde(default)]
    pub display_format: Option<String>,
}

fn set(v: &Option<String>) -> Option<&String> {
    v.as_ref().filter(|s| !s.is_empty())
}

impl TreeRuleUpdate {
    /// Changes count against a blank rule (OpenTSDB's setters); level, order and tree address it.
    pub fn changed(&self) -> bool {
        set(&self.kind).is_some()
            || set(&self.field).is_some()
            || set(&self.regex).is_some()
            || set(&self.separator).is_some()
            || set(&self.description).is_some()
            || set(&self.notes).is_some()
            || set(&self.custom_field).is_some()
            || set(&self.display_format).is_some()
            || self.regex_group_idx.is_some_and(|i| i != 0)
    }

    /// Copies the fields the caller set into `r`.
    pub fn apply_to(&self, r: &mut TreeRule) -> Result<(), RuleError> {
        if let Some(k) = set(&self.kind) {
            r.kind = Some(RuleType::parse(k)?);
        }
        let copy = |src: &Option<String>, dst: &mut String| {
            if let Some(v) = set(src) {
                *dst = v.clone();
            }
        };
        copy(&self.field, &mut r.field);
        copy(&self.regex, &mut r.regex);
        copy(&self.separator, &mut r.separator);
        copy(&self.description, &mut r.description);
        copy(&self.notes, &mut r.notes);
        copy(&self.custom_field, &mut r.custom_field);
        copy(&self.display_format, &mut r.display_format);
        if let Some(i) = self.regex_group_idx.filter(|&i| i != 0) {
            r.regex_group_idx = i;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_order_and_round_trip() {
        let r = TreeRule {
            kind: Some(RuleType::Tagk),
            field: "host".into(),
            regex: "^.*\\.(.*)$".into(),
            level: 1,
            order: 2,
            tree_id: 1,
            ..Default::default()
        };
        let j = r.to_json();
        assert_eq!(
            j,
            r#"{"type":"TAGK","field":"host","regex":"^.*\\.(.*)$","separator":"","description":"","notes":"","level":1,"order":2,"treeId":1,"customField":"","regexGroupIdx":0,"displayFormat":""}"#
        );
        assert_eq!(TreeRule::from_json(j.as_bytes()).unwrap(), r);
        assert_eq!(r.to_string(), "[1:1:2:TAGK]");
        assert_eq!(String::from_utf8(qualifier(0, 1)).unwrap(), "tree_rule:0:1");
    }

    #[test]
    fn validation_messages() {
        let mut r = TreeRule::default();
        assert_eq!(r.validate().unwrap_err().to_string(), "Missing rule type");
        r.kind = Some(RuleType::TagvCustom);
        assert_eq!(
            r.validate().unwrap_err().to_string(),
            "Missing field name required for TAGV_CUSTOM rule"
        );
        r.field = "host".into();
        assert_eq!(
            r.validate().unwrap_err().to_string(),
            "Missing custom field name required for TAGV_CUSTOM rule"
        );
        r.kind = Some(RuleType::Tagk);
        assert!(r.validate().is_ok());
        r.regex = "(?<=x)y".into();
        let e = r.validate().unwrap_err();
        assert!(matches!(e, RuleError::Regex { .. }));
        assert!(e.to_string().starts_with("Invalid regular expression"));
        assert_eq!(
            RuleType::parse("tagk_CUSTOM").unwrap(),
            RuleType::TagkCustom
        );
        assert_eq!(
            RuleType::parse("x").unwrap_err().to_string(),
            "Unrecognized rule type"
        );
    }
}
