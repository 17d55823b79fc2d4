// TODO template image/e2e.rs.tpl
