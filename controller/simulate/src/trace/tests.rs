use super::*;

const YAML: &str = "\
workers:
  - {name: worker-1, cpus: 4}
  - {name: worker-2, cpus: 8}
workloads:
  - {name: late, arrival: 10, cpus: 2, pods: 2, priority: 1000, run: 60, stop: 3}
  - {name: early, arrival: 0.5, cpus: 0.5, run: 1, cluster: worker-2}
";

#[test]
fn a_yaml_trace_reads_with_defaults_and_sorted_by_arrival() {
    let t = parse_yaml(YAML).unwrap();
    assert_eq!(t.workers[1].cpu_milli, 8000);
    assert_eq!(t.workloads[0].name, "early");
    assert_eq!(t.workloads[0].arrival, 500);
    assert_eq!(t.workloads[0].cpu_milli, 500);
    assert_eq!(
        (
            t.workloads[0].pods,
            t.workloads[0].priority,
            t.workloads[0].stop
        ),
        (1, 0, 0)
    );
    assert_eq!(t.workloads[0].cluster, Some(1));
    assert_eq!(t.workloads[1].run, 60_000);
    assert_eq!(t.workloads[1].cluster, None);
}

#[test]
fn a_csv_trace_reads_and_round_trips_through_to_csv() {
    let csv = "\
# a comment
# workers: worker-1=4 worker-2=8

name,arrival,cpus,pods,priority,run,stop,cluster
late,10,2,2,1000,60,3,
early,0.5,0.5,1,0,1,0,worker-2
";
    let t = parse_csv(csv).unwrap();
    assert_eq!(t, parse_yaml(YAML).unwrap());
    assert_eq!(parse_csv(&to_csv(&t)).unwrap(), t);
}

#[test]
fn csv_columns_may_come_in_any_order_and_optional_ones_may_be_left_out() {
    let t = parse_csv("# workers: a=2\nrun,name,cpus,arrival\n5,x,1,0\n").unwrap();
    assert_eq!(t.workloads[0].run, 5000);
    assert_eq!(t.workloads[0].pods, 1);
}

fn error_of(result: Result<Trace, TraceError>) -> String {
    match result {
        Ok(t) => panic!("accepted: {t:?}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn bad_csv_values_name_the_line_and_the_field() {
    let head = "# workers: worker-1=4\nname,arrival,cpus,pods,priority,run,stop,cluster\n";
    for (row, expected) in [
        (
            "a,0,two,1,0,5,0,",
            "line 3: field cpus: \"two\" is not a number",
        ),
        (
            "a,0,0,1,0,5,0,",
            "line 3: field cpus: 0 must be a positive number of CPUs",
        ),
        ("a,0,1,0,0,5,0,", "line 3: field pods: must be at least 1"),
        (
            "a,0,1,1.5,0,5,0,",
            "line 3: field pods: \"1.5\" is not a whole number",
        ),
        (
            "a,0,1,1,high,5,0,",
            "line 3: field priority: \"high\" is not a whole number",
        ),
        (
            "a,0,1,1,0,5,soon,",
            "line 3: field stop: \"soon\" is not a number",
        ),
        // Several bad cells: the optional ones are read first.
        (
            ",0,1,x,0,5,0,",
            "line 3: field pods: \"x\" is not a whole number",
        ),
        (
            "a,-1,1,1,0,5,0,",
            "line 3: field arrival: -1 must be a number of seconds ≥ 0",
        ),
        ("a,0,1,1,0,,0,", "line 3: field run: missing value"),
        (
            "a,0,1,1,0,5,0,worker-9",
            "line 3: field cluster: no worker is named \"worker-9\"",
        ),
        (
            "a,0,9,1,0,5,0,",
            "line 3: field cpus: 9 CPUs fit on no worker",
        ),
    ] {
        let err = error_of(parse_csv(&format!("{head}{row}\n")));
        assert!(err.starts_with(expected), "{row}: {err}");
    }
    let err = error_of(parse_csv(&format!(
        "{head}a,0,1,1,0,5,0,\na,1,1,1,0,5,0,\n"
    )));
    assert!(
        err.starts_with("line 4: field name: workload name \"a\""),
        "{err}"
    );
    let err = error_of(parse_csv("# workers: worker-1=4\nname,arrival,cpus,size\n"));
    assert!(
        err.starts_with("line 2: field size: unknown column"),
        "{err}"
    );
    let err = error_of(parse_csv("name,arrival,cpus,run\na,0,1,5\n"));
    assert!(err.starts_with("line 2: field workers:"), "{err}");
    let err = error_of(parse_csv("# workers: w=four\n"));
    assert!(err.starts_with("line 1: field workers: \"four\""), "{err}");
}

#[test]
fn bad_yaml_values_name_the_line_and_the_field() {
    let bad = YAML.replace("cpus: 0.5", "cpus: -1");
    let err = error_of(parse_yaml(&bad));
    assert!(err.starts_with("line 6: field cpus: -1"), "{err}");
    let bad = YAML.replace("cluster: worker-2", "cluster: nowhere");
    let err = error_of(parse_yaml(&bad));
    assert!(err.starts_with("line 6: field cluster: no worker"), "{err}");
    let bad = YAML.replace("pods: 2", "pods: 0");
    let err = error_of(parse_yaml(&bad));
    assert!(
        err.starts_with("line 5: field pods: must be at least 1"),
        "{err}"
    );
}

#[test]
fn malformed_yaml_says_where() {
    let bad = YAML.replace("run: 60", "run: soon");
    let err = error_of(parse_yaml(&bad));
    assert!(err.contains("not a valid YAML trace"), "{err}");
    assert!(
        err.contains("line 5") || err.contains("5:"),
        "names the line: {err}"
    );
    let err = error_of(parse_yaml("workers: []\n"));
    assert!(err.contains("no workers"), "{err}");
    let err = error_of(parse_yaml(&YAML.replace("stop: 3", "stop: 3, colour: red")));
    assert!(err.contains("colour"), "{err}");
}
