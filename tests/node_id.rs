//! Static node ids: from an environment variable and from a StatefulSet
//! pod's host name, each checked against the layout.

use std::process::Command;

use flakeid::{Layout, NodeIdError, node_id};

const CHILD_ENV: &str = "FLAKEID_NODE_ID_CHILD";

#[test]
fn statefulset_host_names() {
    let twitter = Layout::twitter();
    assert_eq!(node_id::from_hostname("web-3", &twitter), Ok(3));
    assert_eq!(node_id::from_hostname("web-0", &twitter), Ok(0));
    assert_eq!(node_id::from_hostname("my-app-web-17", &twitter), Ok(17));
    assert_eq!(
        node_id::from_hostname("web-3.web.default.svc.cluster.local", &twitter),
        Ok(3)
    );
    assert_eq!(node_id::from_hostname(" web-5\n", &twitter), Ok(5));
    assert_eq!(node_id::from_hostname("web-1023", &twitter), Ok(1023));
    for bad in ["web", "web-", "-3", "web-3a", "web-x", "", "3.web-x"] {
        assert_eq!(
            node_id::from_hostname(bad, &twitter),
            Err(NodeIdError::NoOrdinal {
                hostname: bad.into()
            }),
            "{bad:?}"
        );
    }
    assert_eq!(
        node_id::from_hostname("web-1024", &twitter),
        Err(NodeIdError::OutOfRange {
            source: "host name web-1024".into(),
            value: 1024,
            max: 1023
        })
    );
    // The JavaScript-safe layout has 64 node ids.
    assert!(matches!(
        node_id::from_hostname("web-64", &Layout::js_safe()),
        Err(NodeIdError::OutOfRange {
            value: 64,
            max: 63,
            ..
        })
    ));
    assert!(matches!(
        node_id::from_hostname("web-99999999999999999999", &twitter),
        Err(NodeIdError::NotANumber { .. })
    ));
}

#[test]
#[cfg_attr(
    not(target_os = "linux"),
    ignore = "reads Linux's /proc/sys/kernel/hostname; elsewhere the function reads /etc/hostname or HOSTNAME"
)]
fn statefulset_reads_this_machines_host_name() {
    let hostname = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .expect("Linux has /proc/sys/kernel/hostname");
    assert_eq!(
        node_id::from_statefulset(&Layout::twitter()),
        node_id::from_hostname(hostname.trim(), &Layout::twitter())
    );
}

#[test]
fn an_unset_variable_is_named() {
    let err = node_id::from_env("FLAKEID_TEST_SURELY_UNSET", &Layout::twitter()).unwrap_err();
    assert_eq!(
        err,
        NodeIdError::NotSet {
            var: "FLAKEID_TEST_SURELY_UNSET".into()
        }
    );
    assert_eq!(
        err.to_string(),
        "environment variable FLAKEID_TEST_SURELY_UNSET is not set"
    );
}

/// Runs `env_child` in a child process with the variable set to `value`.
fn from_env_in_child(value: impl AsRef<std::ffi::OsStr>) -> String {
    let output = Command::new(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            "env_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, "1")
        .env("FLAKEID_TEST_NODE_ID", value)
        .output()
        .unwrap();
    assert!(output.status.success());
    let stdout = String::from_utf8(output.stdout).unwrap();
    stdout
        .lines()
        .find_map(|l| l.split_once("result=").map(|(_, r)| r.to_owned()))
        .expect("the child printed its result")
}

#[test]
#[ignore = "entry point of the child processes of the environment tests"]
fn env_child() {
    if std::env::var(CHILD_ENV).is_err() {
        return;
    }
    let result = node_id::from_env("FLAKEID_TEST_NODE_ID", &Layout::twitter());
    println!("\nresult={result:?}");
}

#[test]
fn environment_variables() {
    assert_eq!(from_env_in_child("7"), "Ok(7)");
    assert_eq!(from_env_in_child(" 12\n"), "Ok(12)");
    assert_eq!(from_env_in_child("1023"), "Ok(1023)");
    for bad in ["", "x7", "-1", "+1", "7.0", "0x10"] {
        assert_eq!(
            from_env_in_child(bad),
            format!(
                "Err(NotANumber {{ source: \"environment variable FLAKEID_TEST_NODE_ID\", value: {bad:?} }})"
            ),
            "{bad:?}"
        );
    }
    // Set, but not Unicode: not a number, rather than "not set".
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        assert_eq!(
            from_env_in_child(std::ffi::OsStr::from_bytes(b"7\xff")),
            "Err(NotANumber { source: \"environment variable FLAKEID_TEST_NODE_ID\", value: \"7\u{fffd}\" })"
        );
    }
    assert_eq!(
        from_env_in_child("1024"),
        "Err(OutOfRange { source: \"environment variable FLAKEID_TEST_NODE_ID\", value: 1024, max: 1023 })"
    );
}
