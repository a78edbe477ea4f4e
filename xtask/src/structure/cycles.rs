//! The circles of a folder's graph: its strongly connected components of more than one module (Tarjan), each
//! reported with its edges and the first place that makes each.

use std::collections::BTreeMap;

use super::tree::{Edges, Graphs};

/// The strongly connected components with more than one module, each sorted, in a stable order.
pub fn cycles(edges: &Edges) -> Vec<Vec<String>> {
    struct State<'a> {
        edges: &'a Edges,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        found: Vec<Vec<String>>,
    }
    fn visit<'a>(state: &mut State<'a>, node: &'a str) {
        let index = state.index.len();
        state.index.insert(node, index);
        state.low.insert(node, index);
        state.stack.push(node);
        let edges = state.edges;
        for next in edges.get(node).into_iter().flat_map(BTreeMap::keys) {
            let next = next.as_str();
            if !state.index.contains_key(next) {
                visit(state, next);
                let low = state.low[node].min(state.low[next]);
                state.low.insert(node, low);
            } else if state.stack.contains(&next) {
                let low = state.low[node].min(state.index[next]);
                state.low.insert(node, low);
            }
        }
        if state.low[node] == state.index[node] {
            let mut component = Vec::new();
            while let Some(member) = state.stack.pop() {
                component.push(member.to_owned());
                if member == node {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                state.found.push(component);
            }
        }
    }
    let mut state = State {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        found: Vec::new(),
    };
    for node in edges.keys() {
        if !state.index.contains_key(node.as_str()) {
            visit(&mut state, node);
        }
    }
    state.found.sort();
    state.found
}

/// The report of every folder's circles, one paragraph per circle; empty when there is none.
pub fn report(graphs: &Graphs) -> String {
    let mut report = String::new();
    for (folder, edges) in graphs {
        for cycle in cycles(edges) {
            report.push_str(&format!("\n  {folder}: cycle {}", cycle.join(" ↔ ")));
            for from in &cycle {
                for (to, place) in &edges[from] {
                    if cycle.contains(to) {
                        report.push_str(&format!("\n    {from} → {to} at {place}"));
                    }
                }
            }
        }
    }
    report
}
