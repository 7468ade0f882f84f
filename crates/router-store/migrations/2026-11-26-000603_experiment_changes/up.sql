-- Every instance keeps the experiments its requests name in memory
-- (`router-store/src/experiments.rs`, `ExperimentFront`): announce each
-- change of an account's experiments, from any instance or by hand, on the
-- channel those fronts listen on (payload: the account ID).
CREATE FUNCTION experiments_notify_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        PERFORM pg_notify('router_experiment_changed', OLD.account_id::text);
    ELSE
        PERFORM pg_notify('router_experiment_changed', NEW.account_id::text);
        IF TG_OP = 'UPDATE' AND OLD.account_id IS DISTINCT FROM NEW.account_id THEN
            PERFORM pg_notify('router_experiment_changed', OLD.account_id::text);
        END IF;
    END IF;
    RETURN NULL;
END;
$$;
CREATE TRIGGER experiments_changed
    AFTER INSERT OR UPDATE OR DELETE ON experiments
    FOR EACH ROW EXECUTE FUNCTION experiments_notify_changed();
