//! The kill helper against a stand-in consumer: a shell script that prints
//! five progress lines on stderr, stops itself after the one that
//! `--pause-after-progress K` names (as a consumer does), and prints `done`
//! on stdout at its end.

use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Stdio};

use inbox_kit_testkit::kill::{
    Running, hold_at_progress, kill_at_progress, signal_at_progress, stop_and_collect,
};

const CONSUMER: &str = r#"
trap 'echo "stopped by TERM after $i"; exit 3' TERM
i=0
while [ "$i" -lt 5 ]; do
    i=$((i + 1))
    echo "progress $i" >&2
    echo "other output $i" >&2
    if [ "$i" = "$2" ]; then kill -STOP $$; fi
done
echo done
"#;

fn consumer() -> Command {
    let mut command = Command::new("sh");
    command.args(["-c", CONSUMER, "consumer"]);
    command
}

#[test]
fn a_kill_lands_right_after_the_chosen_progress_line() {
    for after in 1..=5 {
        let killed = kill_at_progress(consumer(), "progress", after);
        assert!(killed.landed_mid_run, "after {after}: {killed:?}");
        assert_eq!(killed.progress_seen, after, "{killed:?}");
        assert_eq!(killed.status.signal(), Some(libc::SIGKILL), "{killed:?}");
        assert_eq!(killed.stdout, "", "it never reached its end: {killed:?}");
        assert!(
            killed
                .other_output
                .contains(&format!("other output {after}\n")),
            "{killed:?}"
        );
    }
}

#[test]
fn a_process_that_ends_before_the_line_is_reported_never_signalled() {
    let ended = kill_at_progress(consumer(), "progress", 6);
    assert!(!ended.landed_mid_run, "{ended:?}");
    assert_eq!(ended.progress_seen, 5);
    assert!(ended.status.success(), "{ended:?}");
    assert_eq!(ended.stdout, "done\n");
}

#[test]
fn a_signal_is_handled_where_the_process_was_held() {
    let stopped = signal_at_progress(consumer(), "progress", 2, libc::SIGTERM);
    assert!(stopped.landed_mid_run, "{stopped:?}");
    assert_eq!(stopped.status.code(), Some(3), "{stopped:?}");
    assert_eq!(stopped.stdout, "stopped by TERM after 2\n");
    assert_eq!(stopped.progress_seen, 2);
}

#[test]
fn a_held_process_can_be_killed_later() {
    let held = hold_at_progress(consumer(), "progress", 3).expect("held");
    let killed = held.kill();
    assert_eq!(killed.progress_seen, 3);
    assert_eq!(killed.status.signal(), Some(libc::SIGKILL));
}

#[test]
fn a_running_process_is_stopped_and_its_output_collected() {
    let ready = std::env::temp_dir().join(format!("testkit-ready-{}", std::process::id()));
    let _ = std::fs::remove_file(&ready);
    let mut command = Command::new("sh");
    command
        .args([
            "-c",
            "trap 'echo bye; exit 0' TERM; echo 'progress 1' >&2; : > \"$1\"; while :; do sleep 0.05; done",
            "consumer",
        ])
        .arg(&ready)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut running = Running::start(&mut command);
    // Its own word that the trap is set: the file it makes after that.
    while !ready.exists() {
        assert!(
            matches!(running.child().try_wait(), Ok(None)),
            "it ended early"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let stopped = stop_and_collect(running, "progress", libc::SIGTERM);
    let _ = std::fs::remove_file(&ready);
    assert!(stopped.status.success(), "{stopped:?}");
    assert_eq!(stopped.stdout, "bye\n");
    assert_eq!(stopped.progress_seen, 1);
}

#[test]
fn a_process_left_running_is_killed_with_the_test() {
    let mut running = Running::start(Command::new("sleep").arg("600"));
    let pid = libc::pid_t::try_from(running.child().id()).expect("a pid");
    drop(running);
    // SAFETY: signal 0 only asks whether the pid exists; it was our child,
    // killed and reaped by the drop.
    let exists = unsafe { libc::kill(pid, 0) } == 0;
    assert!(!exists, "the child outlived its guard");
}

#[test]
fn a_process_taken_out_of_its_guard_is_left_alone() {
    let mut command = Command::new("sh");
    command.args(["-c", "exit 7"]);
    let child = Running::start(&mut command).into_child();
    let output = child.wait_with_output().expect("its end");
    assert_eq!(output.status.code(), Some(7));
}
