// TODO template webhook/e2e_validation.rs.tpl
