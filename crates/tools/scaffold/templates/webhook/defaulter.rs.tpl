// TODO template webhook/defaulter.rs.tpl
