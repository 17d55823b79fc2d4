// TODO template webhook/validator.rs.tpl
