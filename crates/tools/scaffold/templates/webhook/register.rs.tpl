// TODO template webhook/register.rs.tpl
