//! Lines out of time order across processes are refused, at the first such line, and no other:
//! the reader against the rule itself ("a line whose server time is before that of an earlier
//! line of another process cannot come after it") on random interleavings of three processes,
//! each keeping its own clock.

use leaselab_record::read;

#[test]
fn the_first_line_before_an_earlier_line_of_another_process_is_refused() {
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = |n: u64| {
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (seed >> 33) % n
    };
    let (mut refused, mut taken) = (0, 0);
    for _ in 0..3000 {
        let mut clocks = [0u64; 3];
        let mut text = String::from("{\"format\":\"leaselab-history\",\"version\":1}\n");
        // Each step: one process's `now`, invoke and answer on two lines at its time.
        let mut steps: Vec<(usize, u64)> = Vec::new();
        for _ in 0..(2 + next(8)) {
            let p = next(3) as usize;
            clocks[p] += next(15);
            steps.push((p, clocks[p]));
        }
        for (p, t) in &steps {
            text.push_str(&format!(
                "{{\"type\":\"invoke\",\"process\":\"p{p}\",\"time\":{t},\"op\":\"now\",\"db\":\"lease\"}}\n{{\"type\":\"ok\",\"process\":\"p{p}\",\"time\":{t},\"op\":\"now\",\"value\":{t}}}\n"
            ));
        }
        // The rule: the first step earlier than an earlier step of another process.
        let first_bad = (0..steps.len()).find(|&i| {
            steps[..i]
                .iter()
                .any(|(q, u)| *q != steps[i].0 && steps[i].1 < *u)
        });
        match (read::parse(&text, "f.jsonl"), first_bad) {
            (Ok(_), None) => taken += 1,
            (Err(e), Some(i)) => {
                assert_eq!(
                    (e.line, e.field.as_str()),
                    (2 + 2 * i, "time"),
                    "{e}\n{text}"
                );
                assert!(e.message.starts_with("out of order"), "{e}");
                refused += 1;
            }
            (r, bad) => panic!("{:?} but the rule says {bad:?}\n{text}", r.err()),
        }
    }
    assert!(
        refused > 500 && taken > 500,
        "{refused} refused, {taken} taken"
    );
}
