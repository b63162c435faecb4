"""``--db`` without a path reads the database ReFrame writes: its
storage/sqlite_db_file as the configuration files set it."""
from hpcval.publish import results


def test_the_configuration_setting_is_followed(tmp_path, monkeypatch):
    site = tmp_path / 'site_settings.py'
    site.write_text("site_configuration = {'storage': [{'enable': True, "
                    "'sqlite_db_file': '$HOME/site/results.db'}]}\n")
    monkeypatch.delenv('RFM_SQLITE_DB_FILE', raising=False)
    monkeypatch.setenv('HOME', str(tmp_path))
    monkeypatch.setenv('RFM_CONFIG_FILES', str(site))
    monkeypatch.setenv('RFM_SYSTEM', 'local')
    assert results.default_db() == str(tmp_path / 'site' / 'results.db')


def test_the_environment_wins_and_the_default_is_reframes(tmp_path,
                                                          monkeypatch):
    monkeypatch.setenv('RFM_SQLITE_DB_FILE', str(tmp_path / 'x.db'))
    assert results.default_db() == str(tmp_path / 'x.db')
    monkeypatch.delenv('RFM_SQLITE_DB_FILE')
    monkeypatch.delenv('RFM_CONFIG_FILES', raising=False)
    monkeypatch.setenv('HOME', str(tmp_path))
    monkeypatch.setenv('RFM_SYSTEM', 'local')
    assert results.default_db() == str(tmp_path / '.reframe' / 'reports' /
                                       'results.db')
