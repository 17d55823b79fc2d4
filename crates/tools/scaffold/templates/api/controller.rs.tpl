// TODO template api/controller.rs.tpl
