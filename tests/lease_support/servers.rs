//! The servers the scenarios run on: etcd and Redis (the test servers'
//! [`flakeid_test_servers::Server`]), and PostgreSQL and MariaDB (their
//! `Postgres`, durable, and `Mariadb`), behind one type so that every
//! scenario runs on each store unchanged.

use std::net::SocketAddr;

use flakeid_test_servers::{Mariadb, Postgres};

/// Which store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Etcd,
    Redis,
    Postgres,
    Mysql,
}

impl Kind {
    /// `etcd`, `redis`, `postgres` or `mysql`.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Etcd => "etcd",
            Kind::Redis => "redis",
            Kind::Postgres => "postgres",
            Kind::Mysql => "mysql",
        }
    }

    /// The kind [`Kind::name`] names.
    pub fn parse(s: &str) -> Kind {
        match s {
            "etcd" => Kind::Etcd,
            "redis" => Kind::Redis,
            "postgres" => Kind::Postgres,
            "mysql" => Kind::Mysql,
            other => panic!("unknown store {other}"),
        }
    }

    /// A table of rows rather than keys.
    pub fn is_sql(self) -> bool {
        matches!(self, Kind::Postgres | Kind::Mysql)
    }
}

/// The URL a client of `kind` connects to at `addr` (the SQL servers'
/// superusers, without passwords, on their test databases).
pub fn url_at(kind: Kind, addr: SocketAddr) -> String {
    match kind {
        Kind::Etcd => flakeid_test_servers::url_at(flakeid_test_servers::Kind::Etcd, addr),
        Kind::Redis => flakeid_test_servers::url_at(flakeid_test_servers::Kind::Redis, addr),
        Kind::Postgres => format!("postgres://postgres@{addr}/postgres"),
        Kind::Mysql => format!("mysql://root@{addr}/flakeid"),
    }
}

enum Inner {
    KeyValue(flakeid_test_servers::Server),
    Postgres(Postgres),
    Mysql(Mariadb),
}

/// A running server of one kind, stopped when dropped.
pub struct Server {
    pub kind: Kind,
    inner: Inner,
}

impl Server {
    pub fn start(kind: Kind) -> Server {
        let inner = match kind {
            Kind::Etcd => Inner::KeyValue(flakeid_test_servers::Server::start(
                flakeid_test_servers::Kind::Etcd,
            )),
            Kind::Redis => Inner::KeyValue(flakeid_test_servers::Server::start(
                flakeid_test_servers::Kind::Redis,
            )),
            // Durable: a lease's marks must survive a crash of the server.
            Kind::Postgres => Inner::Postgres(Postgres::start_durable()),
            Kind::Mysql => Inner::Mysql(Mariadb::start()),
        };
        Server { kind, inner }
    }

    pub fn addr(&self) -> SocketAddr {
        match &self.inner {
            Inner::KeyValue(s) => s.addr(),
            Inner::Postgres(s) => s.addr(),
            Inner::Mysql(s) => s.addr(),
        }
    }

    pub fn url(&self) -> String {
        url_at(self.kind, self.addr())
    }

    /// SIGKILL: no shutdown, no flush beyond what was already durable.
    pub fn kill(&mut self) {
        match &mut self.inner {
            Inner::KeyValue(s) => s.kill(),
            Inner::Postgres(s) => s.kill(),
            Inner::Mysql(s) => s.kill(),
        }
    }

    /// Starts again on the same port and data.
    pub fn restart(&mut self) {
        match &mut self.inner {
            Inner::KeyValue(s) => s.restart(),
            Inner::Postgres(s) => s.restart(),
            Inner::Mysql(s) => s.restart(),
        }
    }

    /// Runs SQL as the superuser (the SQL servers only); its output.
    pub fn sql(&self, sql: &str) -> String {
        let out = match &self.inner {
            Inner::KeyValue(_) => panic!("{:?} runs no SQL", self.kind),
            Inner::Postgres(s) => s.sql(sql),
            Inner::Mysql(s) => s.sql(sql),
        };
        out.unwrap_or_else(|e| panic!("{sql}: {e}"))
    }
}
