// TODO template webhook/e2e_defaulting.rs.tpl
