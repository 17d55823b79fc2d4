// TODO template webhook/head.rs.tpl
