// TODO template api/e2e.rs.tpl
