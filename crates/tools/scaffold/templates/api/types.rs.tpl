// TODO template api/types.rs.tpl
