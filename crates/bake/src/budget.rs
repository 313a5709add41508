//! What reading a bake file may spend: evaluations and bytes, bounded before anything is
//! evaluated, so a hostile file (a variable doubled a hundred times) is refused rather than read.

use std::collections::BTreeMap;

use hcl::eval::{Context, Evaluate};
use serde_json::Value;

use crate::{Error, MAX_STEPS, MAX_TOTAL_BYTES, MAX_VALUE_BYTES, refusal};

/// What reading a file may still spend: evaluations, and bytes evaluated.
pub(crate) struct Budget<'a> {
    pub(crate) text: &'a str,
    pub(crate) steps: usize,
    pub(crate) bytes: usize,
}

/// A block of the file, for messages: (`variable` or `target`, its name).
type Block<'a> = (&'a str, &'a str);

impl<'a> Budget<'a> {
    pub(crate) fn new(text: &'a str) -> Budget<'a> {
        Budget { text, steps: 0, bytes: 0 }
    }

    /// The line the block starts on (its first mention), for messages: 1 when it cannot be told.
    pub(crate) fn line(&self, (kind, name): &Block<'_>) -> usize {
        let at = [format!("{kind} \"{name}\""), format!("{kind} {name}")]
            .iter()
            .find_map(|needle| self.text.find(needle.as_str()))
            .unwrap_or(0);
        self.text[..at].matches('\n').count() + 1
    }

    pub(crate) fn refuse(&self, block: &Block<'_>, what: &str, why: String) -> Error {
        let (kind, name) = block;
        Error::Refusal(format!("line {}: {kind} `{name}`{what} {why}", self.line(block)))
    }

    /// Evaluates `expr` if what it expands to is within bounds: `Ok(Err(why))` when it cannot be
    /// evaluated yet (a variable not resolved) or at all, an [`Error::Refusal`] past a bound.
    pub(crate) fn value(
        &mut self,
        block: &Block<'_>,
        expr: &hcl::Expression,
        context: &Context<'_>,
        sizes: &BTreeMap<String, hcl::Value>,
    ) -> Result<Result<hcl::Value, String>, Error> {
        self.steps += 1;
        if self.steps > MAX_STEPS {
            return Err(self.refuse(block, "", format!("takes more than {MAX_STEPS} evaluations to read")));
        }
        let estimate = match estimate(expr, sizes) {
            Ok(estimate) => estimate,
            Err(Unbounded) => {
                return Err(Error::Unreadable(refusal(
                    &format!("{} `{}`", block.0, block.1),
                    "a `for` expression or directive",
                )));
            }
        };
        if estimate > MAX_VALUE_BYTES {
            return Err(self.refuse(
                block,
                "",
                format!("would expand to {estimate} bytes, more than the {MAX_VALUE_BYTES} a value may hold"),
            ));
        }
        let value = match expr.evaluate(context) {
            Ok(value) => value,
            Err(error) => return Ok(Err(error.to_string())),
        };
        self.bytes = self.bytes.saturating_add(size(&value));
        if self.bytes > MAX_TOTAL_BYTES {
            return Err(self.refuse(
                block,
                "",
                format!("brings what the file expands to past the {MAX_TOTAL_BYTES} bytes a bake file may"),
            ));
        }
        Ok(Ok(value))
    }

    /// A target's field, evaluated within bounds, as JSON.
    pub(crate) fn evaluate(
        &mut self,
        block: &Block<'_>,
        field: &str,
        expr: &hcl::Expression,
        context: &Context<'_>,
        variables: &BTreeMap<String, hcl::Value>,
    ) -> Result<Value, Error> {
        let value = match self
            .value(block, expr, context, variables)
            .map_err(|e| e.map(|m| format!("{m} (`{field}`)")))?
        {
            Ok(value) => value,
            Err(why) => return Err(Error::Unreadable(refusal(&format!("{} `{}`: `{field}`", block.0, block.1), &why))),
        };
        serde_json::to_value(&value).map_err(|e| Error::Unreadable(e.to_string()))
    }
}

/// A `for` expression or directive: what it makes is as long as what it goes over, and more.
pub(crate) struct Unbounded;

/// The most bytes `expr` can evaluate to, given the variables already resolved (`sizes`): its
/// literal parts and the values it names, summed (a conditional, its larger branch). A variable
/// not in `sizes` is taken from nowhere yet: evaluating it fails, and it is tried again.
pub(crate) fn estimate(expr: &hcl::Expression, sizes: &BTreeMap<String, hcl::Value>) -> Result<usize, Unbounded> {
    use hcl::Expression as E;
    Ok(match expr {
        E::Null | E::Bool(_) | E::Number(_) => 8,
        E::String(text) => text.len(),
        E::Array(items) => items.iter().try_fold(2usize, |sum, item| Ok(sum.saturating_add(estimate(item, sizes)?)))?,
        E::Object(entries) => entries.iter().try_fold(2usize, |sum, (key, value)| {
            let key = match key {
                hcl::ObjectKey::Identifier(identifier) => identifier.as_str().len(),
                hcl::ObjectKey::Expression(expr) => estimate(expr, sizes)?,
                _ => 0,
            };
            Ok(sum.saturating_add(key).saturating_add(estimate(value, sizes)?))
        })?,
        E::TemplateExpr(template) => {
            let template = hcl::Template::from_expr(template).map_err(|_| Unbounded)?;
            template_estimate(template.elements(), sizes)?
        }
        E::Variable(variable) => sizes.get(variable.as_str()).map_or(0, size),
        E::Traversal(traversal) => estimate(&traversal.expr, sizes)?,
        E::FuncCall(call) => {
            call.args.iter().try_fold(0usize, |sum, arg| Ok(sum.saturating_add(estimate(arg, sizes)?)))?
        }
        E::Parenthesis(inner) => estimate(inner, sizes)?,
        E::Conditional(conditional) => {
            estimate(&conditional.true_expr, sizes)?.max(estimate(&conditional.false_expr, sizes)?)
        }
        E::Operation(_) => 8,
        // A `for` expression (as long as what it goes over, and more), and whatever a newer
        // hcl-rs adds: not estimated, so not evaluated.
        _ => return Err(Unbounded),
    })
}

pub(crate) fn template_estimate(
    elements: &[hcl::template::Element],
    sizes: &BTreeMap<String, hcl::Value>,
) -> Result<usize, Unbounded> {
    use hcl::template::{Directive, Element};
    elements.iter().try_fold(0usize, |sum, element| {
        let more = match element {
            Element::Literal(text) => text.len(),
            Element::Interpolation(interpolation) => estimate(&interpolation.expr, sizes)?,
            Element::Directive(directive) => match directive.as_ref() {
                Directive::If(directive) => {
                    let when = template_estimate(directive.true_template.elements(), sizes)?;
                    let otherwise = match &directive.false_template {
                        Some(template) => template_estimate(template.elements(), sizes)?,
                        None => 0,
                    };
                    when.max(otherwise)
                }
                Directive::For(_) => return Err(Unbounded),
            },
        };
        Ok(sum.saturating_add(more))
    })
}

/// What a value holds, in bytes, as JSON would write it (near enough).
pub(crate) fn size(value: &hcl::Value) -> usize {
    match value {
        hcl::Value::String(text) => text.len() + 2,
        hcl::Value::Array(items) => items.iter().map(size).sum::<usize>() + 2,
        hcl::Value::Object(entries) => {
            entries.iter().map(|(key, value)| key.len() + 3 + size(value)).sum::<usize>() + 2
        }
        _ => 8,
    }
}

pub(crate) fn context_of(variables: &BTreeMap<String, hcl::Value>) -> Context<'static> {
    let mut context = Context::new();
    for (name, value) in variables {
        context.declare_var(name.as_str(), value.clone());
    }
    context
}
