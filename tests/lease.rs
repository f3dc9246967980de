//! Node-id leases against real servers, started on 127.0.0.1 by the tests
//! themselves: the scenarios of `lease_support/` on etcd (Debian's
//! `etcd-server`; feature `etcd`, module `etcd`), on Redis
//! (`redis-server`; feature `redis`, module `redis`), on PostgreSQL
//! (`postgresql`; feature `postgres`, module `postgres`) and on MariaDB
//! (`mariadb-server`; feature `mysql`, module `mysql`). A store whose
//! feature is off is left out.

#![cfg(any(
    feature = "etcd",
    feature = "redis",
    feature = "postgres",
    feature = "mysql"
))]

mod lease_support;

/// The scenarios both stores run, as tests of a module per store.
macro_rules! scenarios {
    ($kind:expr, $module:literal) => {
        use crate::lease_support::{self, Kind, Server, honest, one_at_a_time};

        #[test]
        fn claim_renew_release() {
            let _serial = one_at_a_time();
            lease_support::claim_renew_release(&Server::start($kind));
        }

        #[test]
        fn all_held_bad_marks_and_unreachable_servers_are_typed_errors() {
            let _serial = one_at_a_time();
            lease_support::errors(&Server::start($kind));
        }

        #[test]
        fn two_processes_of_32_generators_race_for_node_ids() {
            let _serial = one_at_a_time();
            let child = concat!($module, "::race_child");
            lease_support::two_processes_race(&Server::start($kind), child);
        }

        #[test]
        #[ignore = "entry point of the child processes of the race test"]
        fn race_child() {
            lease_support::race_child();
        }

        #[test]
        fn killed_server_fences_every_generator_and_restarted_server_resumes_them() {
            let _serial = one_at_a_time();
            lease_support::killed_then_restarted(&mut Server::start($kind));
        }

        #[test]
        fn churn_of_1000_nodes_reuses_node_ids_only_after_release_or_expiry() {
            let _serial = one_at_a_time();
            lease_support::churn(&Server::start($kind));
        }

        #[test]
        fn a_long_clock_rollback_rotates_to_a_fresh_node_id() {
            let _serial = one_at_a_time();
            lease_support::rotation_after_rollback(&Server::start($kind));
        }

        #[test]
        fn a_server_answering_nonsense_is_a_typed_error() {
            let _serial = one_at_a_time();
            lease_support::nonsense_replies($kind);
        }

        #[test]
        fn a_store_that_stops_answering_fences_every_generator_at_the_deadline() {
            let _serial = one_at_a_time();
            lease_support::frozen_store(&Server::start($kind));
        }

        #[tokio::test(flavor = "current_thread")]
        async fn builds_uses_and_drops_inside_a_current_thread_runtime() {
            let _serial = one_at_a_time();
            lease_support::inside_a_runtime(&Server::start($kind));
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn builds_uses_and_drops_inside_a_multi_thread_runtime() {
            let _serial = one_at_a_time();
            lease_support::inside_a_runtime(&Server::start($kind));
        }

        #[test]
        fn marks_far_ahead_of_the_clock_are_skipped_counted_and_named() {
            let _serial = one_at_a_time();
            lease_support::poisoned_marks(&Server::start($kind));
        }

        #[test]
        fn a_renewal_answered_after_the_deadline_fences_and_does_not_reopen() {
            let _serial = one_at_a_time();
            lease_support::late_renewal(&Server::start($kind), &honest);
        }

        #[test]
        fn the_next_holder_starts_after_a_predecessor_whose_clock_ran_ahead() {
            let _serial = one_at_a_time();
            let server = Server::start($kind);
            assert_eq!(
                lease_support::successor_starts_after_the_mark(&server, &honest),
                Ok(())
            );
        }
    };
}

#[cfg(feature = "etcd")]
mod etcd {
    scenarios!(Kind::Etcd, "etcd");

    /// (etcd only: a renewal is hedged over the members, and one applied
    /// late must not lower the mark.)
    #[test]
    fn a_renewal_applied_after_a_newer_one_leaves_the_mark() {
        let _serial = one_at_a_time();
        let server = Server::start(Kind::Etcd);
        assert_eq!(
            lease_support::late_copy_leaves_the_mark(&server, &honest),
            Ok(())
        );
    }

    /// The scenario above with the mark's revision guard planted away
    /// (`--cfg flakeid_plant`): it must fail, naming what broke.
    #[cfg(flakeid_plant)]
    mod plants {
        use crate::lease_support::{self, Kind, Server, one_at_a_time, planted};

        #[test]
        fn etcd_mark_unguarded() {
            let _serial = one_at_a_time();
            let server = Server::start(Kind::Etcd);
            let tweak = planted("etcd-mark-unguarded");
            let caught = lease_support::late_copy_leaves_the_mark(&server, &tweak);
            let Err(broke) = caught else {
                panic!("the planted bug went unnoticed");
            };
            assert!(
                broke.contains("a renewal applied late lowered it"),
                "{broke}"
            );
        }
    }
}

#[cfg(feature = "redis")]
mod redis {
    scenarios!(Kind::Redis, "redis");

    /// (Redis only: the proxy holds one answer, and an etcd renewal is
    /// two requests, the second sent after the first's answer.)
    #[test]
    fn a_renewal_answered_late_keeps_the_deadline_of_its_sending() {
        let _serial = one_at_a_time();
        let server = Server::start(Kind::Redis);
        assert_eq!(
            lease_support::deadline_counts_from_sending(&server, &honest),
            Ok(())
        );
    }

    /// The scenarios above with lease bugs planted (`--cfg flakeid_plant`):
    /// each must fail, naming what broke.
    #[cfg(flakeid_plant)]
    mod plants {
        use crate::lease_support::{self, Kind, Server, fails_naming, one_at_a_time, planted};

        #[test]
        fn deadline_from_answer() {
            let _serial = one_at_a_time();
            let server = Server::start(Kind::Redis);
            let tweak = planted("deadline-from-answer");
            let caught = lease_support::deadline_counts_from_sending(&server, &tweak);
            let Err(broke) = caught else {
                panic!("the planted bug went unnoticed");
            };
            assert!(
                broke.contains("after the deadline of a renewal answered"),
                "{broke}"
            );
        }

        #[test]
        fn late_answer_reopens() {
            let _serial = one_at_a_time();
            let server = Server::start(Kind::Redis);
            let tweak = planted("late-answer-reopens");
            fails_naming("issued after a late renewal", || {
                lease_support::late_renewal(&server, &tweak);
            });
        }

        #[test]
        fn claim_ignores_mark() {
            let _serial = one_at_a_time();
            let server = Server::start(Kind::Redis);
            let tweak = planted("claim-ignores-mark");
            let caught = lease_support::successor_starts_after_the_mark(&server, &tweak);
            let Err(broke) = caught else {
                panic!("the planted bug went unnoticed");
            };
            assert!(broke.contains("below its predecessor's last ID"), "{broke}");
        }
    }
}

/// The tests only the SQL stores have (`lease_support/sql.rs`), and their
/// plants, for one SQL store.
#[cfg(any(feature = "postgres", feature = "mysql"))]
macro_rules! sql_scenarios {
    ($kind:expr, $module:literal) => {
        #[test]
        fn sixty_four_claimers_in_one_process_race_for_sixteen_node_ids() {
            let _serial = one_at_a_time();
            lease_support::sql::racing_claimers(&Server::start($kind));
        }

        #[test]
        fn hostile_table_names_and_prefixes_stay_data() {
            let _serial = one_at_a_time();
            lease_support::sql::hostile_names(&Server::start($kind));
        }

        #[test]
        fn a_missing_or_misshapen_table_or_a_user_without_rights_is_named() {
            let _serial = one_at_a_time();
            lease_support::sql::bad_tables(&Server::start($kind));
        }

        #[test]
        fn a_read_only_server_or_a_wrong_password_is_refused() {
            let _serial = one_at_a_time();
            lease_support::sql::refusals(&Server::start($kind));
        }

        #[test]
        fn a_row_locked_by_another_session_fences_by_the_deadline_then_recovers() {
            let _serial = one_at_a_time();
            lease_support::sql::locked_row(&Server::start($kind));
        }

        #[test]
        fn a_holder_whose_row_was_taken_is_fenced_at_its_next_renewal() {
            let _serial = one_at_a_time();
            assert_eq!(
                lease_support::sql::taken_row_fences(&Server::start($kind), &honest),
                Ok(())
            );
        }

        #[test]
        fn a_claimant_whose_clock_runs_ahead_takes_no_live_node_id() {
            let _serial = one_at_a_time();
            let child = concat!($module, "::clock_ahead_child");
            assert_eq!(
                lease_support::sql::clock_ahead(&Server::start($kind), child, None),
                Ok(())
            );
        }

        #[test]
        #[ignore = "entry point of the child process of the clock-ahead test"]
        fn clock_ahead_child() {
            lease_support::sql::clock_ahead_child();
        }

        /// The scenarios above with a SQL store's bugs planted (`--cfg
        /// flakeid_plant`): each must fail, naming what broke.
        #[cfg(flakeid_plant)]
        mod plants {
            use crate::lease_support::{self, Kind, Server, one_at_a_time, planted};

            #[test]
            fn sql_expiry_by_claimant() {
                let _serial = one_at_a_time();
                let child = concat!($module, "::clock_ahead_child");
                let server = Server::start($kind);
                let caught =
                    lease_support::sql::clock_ahead(&server, child, Some("sql-expiry-by-claimant"));
                let Err(broke) = caught else {
                    panic!("the planted bug went unnoticed");
                };
                assert!(
                    broke.contains("took node id 0 from its live holder"),
                    "{broke}"
                );
            }

            #[test]
            fn sql_renewal_unchecked() {
                let _serial = one_at_a_time();
                let server = Server::start($kind);
                let tweak = planted("sql-renewal-unchecked");
                let caught = lease_support::sql::taken_row_fences(&server, &tweak);
                let Err(broke) = caught else {
                    panic!("the planted bug went unnoticed");
                };
                assert!(broke.contains("kept issuing"), "{broke}");
            }

            #[test]
            fn sql_claim_drops_mark() {
                let _serial = one_at_a_time();
                let server = Server::start($kind);
                let tweak = planted("sql-claim-drops-mark");
                let caught = lease_support::successor_starts_after_the_mark(&server, &tweak);
                let Err(broke) = caught else {
                    panic!("the planted bug went unnoticed");
                };
                assert!(broke.contains("below its predecessor's last ID"), "{broke}");
            }
        }
    };
}

#[cfg(feature = "postgres")]
mod postgres {
    scenarios!(Kind::Postgres, "postgres");
    sql_scenarios!(Kind::Postgres, "postgres");

    /// (PostgreSQL only: a primary and a streaming standby.) The standby
    /// promoted after writes were lost on purpose: the first claims on it
    /// wait out the longest TTL in use, so no two generators issue under
    /// one node id.
    #[test]
    fn a_promotion_that_lost_writes_makes_the_first_claims_wait() {
        let _serial = one_at_a_time();
        assert_eq!(lease_support::sql::promotion(&honest), Ok(()));
    }

    #[cfg(flakeid_plant)]
    mod promotion_plants {
        use crate::lease_support::{self, one_at_a_time, planted};

        #[test]
        fn epoch_wait_skipped_on_postgres() {
            let _serial = one_at_a_time();
            let tweak = planted("epoch-wait-skipped");
            let caught = lease_support::sql::promotion(&tweak);
            let Err(broke) = caught else {
                panic!("the planted bug went unnoticed");
            };
            assert!(broke.contains("both issued under node id"), "{broke}");
        }
    }
}

#[cfg(feature = "mysql")]
mod mysql {
    scenarios!(Kind::Mysql, "mysql");
    sql_scenarios!(Kind::Mysql, "mysql");
}
