// TODO template webhook/e2e_head.rs.tpl
