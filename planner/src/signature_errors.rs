//! DataFusion's refusal of a function's argument types, said plainly.
//! DataFusion raised some as internal errors ("Internal error: Function
//! 'sum' failed to match any signature, errors: ... This issue was likely
//! caused by a bug in DataFusion's code. Please help us to resolve this by
//! filing a bug report ...") listing every candidate's refusal, and named
//! the arguments by Arrow's types (`sum(Utf8View)`). The error keeps its
//! last sentence (the call and the candidates), the types named as SQL
//! names them (`sum(varchar)`).

use datafusion::error::DataFusionError;

const NO_MATCH: &str = "No function matches the given name and argument types";

/// `e`, if DataFusion refused a call's argument types, as a planning error
/// naming the call and its candidates; any other error as it is.
pub fn plain(e: DataFusionError) -> DataFusionError {
    let message = e.to_string();
    let Some(at) = message.find(NO_MATCH) else {
        return e;
    };
    let said = &message[at..];
    // A refusal worded twice (an aggregate of squall's wrapping
    // DataFusion's names the wrapped one's candidates first): the first.
    let said = said[NO_MATCH.len()..].find(NO_MATCH).map_or(said, |again| {
        said[..NO_MATCH.len() + again].trim_end_matches(['.', '\n', ' '])
    });
    let said = said
        .find("This issue was likely caused by a bug")
        .map_or(said, |bug| said[..bug].trim_end_matches(['.', '\n', ' ']));
    DataFusionError::Plan(sql_types(said))
}

/// `text` with Arrow's type names (whole words) as SQL's.
fn sql_types(text: &str) -> String {
    let sql = |word: &str| match word {
        "LargeUtf8" | "Utf8View" | "Utf8" => Some("varchar"),
        "Int64" => Some("bigint"),
        "Int32" => Some("integer"),
        "Int16" => Some("smallint"),
        "Int8" => Some("tinyint"),
        "Float64" => Some("double"),
        "Float32" => Some("real"),
        "Boolean" => Some("boolean"),
        "Date32" => Some("date"),
        "BinaryView" | "Binary" => Some("varbinary"),
        "Decimal128" => Some("decimal"),
        _ => None,
    };
    let mut out = String::with_capacity(text.len());
    let mut word = String::new();
    for c in text.chars().chain(std::iter::once('\0')) {
        if c.is_ascii_alphanumeric() {
            word.push(c);
            continue;
        }
        out.push_str(sql(&word).unwrap_or(&word));
        word.clear();
        if c != '\0' {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::plain;
    use datafusion::error::DataFusionError;

    #[test]
    fn refused_argument_types_are_said_plainly() {
        let e = DataFusionError::Internal(
            "Function 'sum' failed to match any signature, errors: Error during planning: \
             Function 'sum' requires Decimal, but received String (DataType: Utf8View).. \
             This issue was likely caused by a bug in DataFusion's code. \
             No function matches the given name and argument types 'sum(Utf8View)'. \
             You might need to add explicit type casts.\n\tCandidate functions:\n\tsum(Int64)"
                .into(),
        );
        let said = plain(e).to_string();
        assert!(
            !said.contains("bug") && !said.contains("Internal"),
            "{said}"
        );
        assert!(
            said.contains("'sum(varchar)'") && said.contains("sum(bigint)"),
            "{said}"
        );
        // Worded twice (a wrapper's refusal, then DataFusion's with the
        // wrapper's user-defined signature): the first, whole.
        let twice = DataFusionError::Plan(
            "No function matches the given name and argument types 'avg(Utf8)'. \
             You might need to add explicit type casts.\n\tCandidate functions:\n\tavg(Decimal)\n\tavg(Float64). \
             No function matches the given name and argument types 'avg(Utf8)'. \
             You might need to add explicit type casts.\n\tCandidate functions:\n\tavg(UserDefined)"
                .into(),
        );
        let said = plain(twice).to_string();
        assert!(
            said.ends_with("avg(Decimal)\n\tavg(double)")
                && said.matches("No function").count() == 1,
            "{said}"
        );
        let other = plain(DataFusionError::Plan("a plan".into())).to_string();
        assert_eq!(other, "Error during planning: a plan");
    }
}
