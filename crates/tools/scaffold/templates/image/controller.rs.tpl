// TODO template image/controller.rs.tpl
