//! `kyverno test`'s results table (ID, POLICY, RULE, RESOURCE, RESULT,
//! REASON, and MESSAGE with `--detailed-results`), drawn with the box
//! characters Kyverno's table printer uses.

/// One checked expectation.
#[derive(Clone, Debug)]
pub struct Row {
    pub policy: String,
    pub rule: String,
    /// `apiVersion/Kind/namespace/name`.
    pub resource: String,
    /// `Pass` when the expectation held, else `Fail`.
    pub result: String,
    /// `Ok`, `Want pass, got fail`, `Not found`, `Excluded`, ...
    pub reason: String,
    pub message: String,
}

impl Row {
    /// Whether the expectation did not hold (`Skip` rows were not checked).
    pub fn failed(&self) -> bool {
        self.result == "Fail"
    }
}

/// The table of `rows`, numbered from 1.
pub fn render(rows: &[Row], detailed: bool) -> String {
    let mut header = vec!["ID", "POLICY", "RULE", "RESOURCE", "RESULT", "REASON"];
    if detailed {
        header.push("MESSAGE");
    }
    let cells: Vec<Vec<String>> = rows
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let mut c = vec![
                (i + 1).to_string(),
                r.policy.clone(),
                r.rule.clone(),
                r.resource.clone(),
                r.result.clone(),
                r.reason.clone(),
            ];
            if detailed {
                c.push(r.message.replace('\n', " "));
            }
            c
        })
        .collect();
    let widths: Vec<usize> = (0..header.len())
        .map(|i| {
            cells
                .iter()
                .map(|c| c[i].chars().count())
                .chain([header[i].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let rule: String = widths
        .iter()
        .map(|w| format!("│{}", "─".repeat(w + 2)))
        .collect::<String>()
        + "│\n";
    let line = |c: &[String]| {
        c.iter()
            .zip(&widths)
            .map(|(s, w)| format!("│ {s}{} ", " ".repeat(w - s.chars().count())))
            .collect::<String>()
            + "│\n"
    };
    let header: Vec<String> = header.iter().map(|h| h.to_string()).collect();
    let mut out = rule.clone() + &line(&header) + &rule;
    for c in &cells {
        out += &line(c);
    }
    out + &rule
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_fit_their_widest_cell() {
        let rows = [Row {
            policy: "ivpol-sample".into(),
            rule: "ivpol-sample".into(),
            resource: "v1/Pod/default/bad-pod".into(),
            result: "Pass".into(),
            reason: "Ok".into(),
            message: String::new(),
        }];
        let t = render(&rows, false);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(
            lines[1],
            "│ ID │ POLICY       │ RULE         │ RESOURCE               │ RESULT │ REASON │"
        );
        assert_eq!(
            lines[3],
            "│ 1  │ ivpol-sample │ ivpol-sample │ v1/Pod/default/bad-pod │ Pass   │ Ok     │"
        );
        assert_eq!(lines[0], lines[2]);
        assert_eq!(lines.len(), 5);
    }
}
