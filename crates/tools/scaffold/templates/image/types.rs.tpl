// TODO template image/types.rs.tpl
